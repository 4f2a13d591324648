import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { ConfigurationVersionsTable, RunsTable } from '../db/schema.js';

export type ConfigurationVersionRow = Selectable<ConfigurationVersionsTable>;
export type RunRow = Selectable<RunsTable>;

// ---- configuration versions ----

export async function getConfigurationVersion(db: Queryable, id: string): Promise<ConfigurationVersionRow | undefined> {
  return db.selectFrom('configuration_versions').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listConfigurationVersions(db: Queryable, workspaceId: string, page: { limit: number; offset: number }) {
  const base = db.selectFrom('configuration_versions').where('workspace_id', '=', workspaceId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

export async function insertConfigurationVersion(db: Queryable, row: ConfigurationVersionRow): Promise<void> {
  await db.insertInto('configuration_versions').values(row).execute();
}

// ---- runs ----

export async function getRun(db: Queryable, id: string): Promise<RunRow | undefined> {
  return db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listRuns(db: Queryable, workspaceId: string, page: { limit: number; offset: number }) {
  const base = db.selectFrom('runs').where('workspace_id', '=', workspaceId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

export async function insertRun(db: Queryable, row: RunRow): Promise<void> {
  await db.insertInto('runs').values(row).execute();
}

/**
 * Moves a run from one status to another; false when its status changed meanwhile (another
 * request or a job moved it first), so two movers cannot both win.
 */
export async function moveRun(
  db: Queryable,
  id: string,
  from: string,
  changes: Pick<RunRow, 'status' | 'status_timestamps' | 'updated_at'> & Partial<Pick<RunRow, 'plan_json_blob_key' | 'error_message'>>,
): Promise<boolean> {
  const res = await db.updateTable('runs').set(changes).where('id', '=', id).where('status', '=', from).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

// ---- retention ----

/**
 * Under a delete-older policy: final runs created before the cutoff (their stages, results and
 * outcome bodies cascade), then configuration versions before the cutoff that no remaining run
 * uses. A run not yet final, and the configuration it runs, are never touched.
 */
export async function deleteOldRunData(tx: Queryable, organizationId: string, olderThan: string, limit: number, finalStatuses: readonly string[]) {
  const runs = await tx
    .selectFrom('runs as r')
    .innerJoin('workspaces as w', 'w.id', 'r.workspace_id')
    .select(['r.id', 'r.plan_json_blob_key'])
    .where('w.organization_id', '=', organizationId)
    .where('r.created_at', '<', olderThan)
    .where('r.status', 'in', [...finalStatuses])
    .limit(limit)
    .execute();
  const runIds = runs.map((r) => r.id);
  let outcomes = 0;
  if (runIds.length > 0) {
    const o = await tx
      .deleteFrom('task_result_outcomes')
      .where('task_result_id', 'in', (eb) => eb.selectFrom('task_results').select('id').where('run_id', 'in', runIds))
      .executeTakeFirst();
    outcomes = Number(o.numDeletedRows);
    await tx.deleteFrom('runs').where('id', 'in', runIds).execute();
  }
  const cvs =
    runIds.length < limit
      ? await tx
          .selectFrom('configuration_versions as cv')
          .innerJoin('workspaces as w', 'w.id', 'cv.workspace_id')
          .select(['cv.id', 'cv.blob_key'])
          .where('w.organization_id', '=', organizationId)
          .where('cv.created_at', '<', olderThan)
          .where((eb) => eb.not(eb.exists(eb.selectFrom('runs').select('runs.id').whereRef('runs.configuration_version_id', '=', 'cv.id'))))
          .limit(limit - runIds.length)
          .execute()
      : [];
  if (cvs.length > 0) await tx.deleteFrom('configuration_versions').where('id', 'in', cvs.map((c) => c.id)).execute();
  return {
    runIds,
    cvIds: cvs.map((c) => c.id),
    outcomes,
    blobKeys: [...runs.map((r) => r.plan_json_blob_key), ...cvs.map((c) => c.blob_key)].filter((k): k is string => k !== null),
  };
}
