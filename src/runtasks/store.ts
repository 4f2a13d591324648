import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { RunTasksTable, WorkspaceRunTasksTable } from '../db/schema.js';
import type { Secrets } from '../secrets.js';

export type RunTaskRow = Selectable<RunTasksTable>;
export type WorkspaceRunTaskRow = Selectable<WorkspaceRunTasksTable>;

/** The HMAC key column is sealed with the server key: it is read and written only here. */
export function sealHmacKey(secrets: Secrets, key: string | null): string | null {
  return key === null || key === '' ? null : secrets.encrypt(key);
}

/** The task's HMAC key in clear, or '' when it has none (the signature header is then empty). */
export function hmacKeyOf(secrets: Secrets, task: Pick<RunTaskRow, 'hmac_key_sealed'>): string {
  return task.hmac_key_sealed === null ? '' : secrets.decrypt(task.hmac_key_sealed);
}

export async function getRunTask(db: Queryable, id: string): Promise<RunTaskRow | undefined> {
  return db.selectFrom('run_tasks').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listRunTasks(db: Queryable, organizationId: string, page: { limit: number; offset: number }) {
  const base = db.selectFrom('run_tasks').where('organization_id', '=', organizationId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('name_lower').orderBy('id').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

export async function countRunTasks(db: Queryable, organizationId: string): Promise<number> {
  const { n } = await db.selectFrom('run_tasks').where('organization_id', '=', organizationId).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(n);
}

export async function insertRunTask(db: Queryable, row: RunTaskRow): Promise<void> {
  await db.insertInto('run_tasks').values(row).execute();
}

export async function updateRunTaskRow(db: Queryable, id: string, changes: Partial<Omit<RunTaskRow, 'id' | 'organization_id' | 'created_at'>>): Promise<void> {
  await db.updateTable('run_tasks').set(changes).where('id', '=', id).execute();
}

export async function deleteRunTaskRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('run_tasks').where('id', '=', id).execute();
}

/** Every task of an organization whose global configuration applies it to all workspaces. */
export async function globalRunTasks(db: Queryable, organizationId: string): Promise<RunTaskRow[]> {
  return db.selectFrom('run_tasks').selectAll().where('organization_id', '=', organizationId).where('global_configuration', 'is not', null).execute();
}

// ---- workspace run tasks ----

export async function getWorkspaceRunTask(db: Queryable, workspaceId: string, id: string): Promise<WorkspaceRunTaskRow | undefined> {
  return db.selectFrom('workspace_run_tasks').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export async function listWorkspaceRunTasks(db: Queryable, workspaceId: string, page?: { limit: number; offset: number }) {
  const base = db.selectFrom('workspace_run_tasks').where('workspace_id', '=', workspaceId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  let q = base.selectAll().orderBy('created_at').orderBy('id');
  if (page) q = q.limit(page.limit).offset(page.offset);
  return { rows: await q.execute(), total: Number(n) };
}

/** The workspace attachments of tasks, by task id (for the tasks' workspace-tasks relationship). */
export async function workspaceTasksOf(db: Queryable, taskIds: string[]): Promise<Map<string, WorkspaceRunTaskRow[]>> {
  const out = new Map<string, WorkspaceRunTaskRow[]>(taskIds.map((id) => [id, []]));
  if (taskIds.length === 0) return out;
  const rows = await db.selectFrom('workspace_run_tasks').selectAll().where('task_id', 'in', taskIds).orderBy('created_at').orderBy('id').execute();
  for (const r of rows) out.get(r.task_id)?.push(r);
  return out;
}

/** How many distinct workspaces of the organization have some task attached (the free-edition limit). */
export async function countWorkspacesWithTasks(db: Queryable, organizationId: string): Promise<number> {
  const { n } = await db
    .selectFrom('workspace_run_tasks')
    .innerJoin('run_tasks', 'run_tasks.id', 'workspace_run_tasks.task_id')
    .where('run_tasks.organization_id', '=', organizationId)
    .select((eb) => eb.fn.count<number>('workspace_run_tasks.workspace_id').distinct().as('n'))
    .executeTakeFirstOrThrow();
  return Number(n);
}

export async function insertWorkspaceRunTask(db: Queryable, row: WorkspaceRunTaskRow): Promise<void> {
  await db.insertInto('workspace_run_tasks').values(row).execute();
}

export async function updateWorkspaceRunTaskRow(db: Queryable, id: string, changes: Partial<Pick<WorkspaceRunTaskRow, 'stages' | 'enforcement_level' | 'updated_at'>>): Promise<void> {
  await db.updateTable('workspace_run_tasks').set(changes).where('id', '=', id).execute();
}

export async function deleteWorkspaceRunTaskRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('workspace_run_tasks').where('id', '=', id).execute();
}

/** The enabled tasks attached to a workspace, with their attachment (run creation snapshots these). */
export async function enabledAttachments(db: Queryable, workspaceId: string) {
  return db
    .selectFrom('workspace_run_tasks')
    .innerJoin('run_tasks', 'run_tasks.id', 'workspace_run_tasks.task_id')
    .where('workspace_run_tasks.workspace_id', '=', workspaceId)
    .where('run_tasks.enabled', '=', 1)
    .select([
      'workspace_run_tasks.id as workspace_task_id',
      'workspace_run_tasks.stages',
      'workspace_run_tasks.enforcement_level',
      'run_tasks.id as task_id',
      'run_tasks.name as task_name',
      'run_tasks.url as task_url',
    ])
    .orderBy('workspace_run_tasks.created_at')
    .orderBy('workspace_run_tasks.id')
    .execute();
}
