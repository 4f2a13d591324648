import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { StateVersionsTable, WorkspacesTable } from '../db/schema.js';
import { containsInsensitive } from '../organizations/store.js';

export type WorkspaceRow = Selectable<WorkspacesTable>;
export type StateVersionRow = Selectable<StateVersionsTable>;

export async function getWorkspaceById(db: Queryable, id: string): Promise<WorkspaceRow | undefined> {
  return db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function getWorkspaceByName(db: Queryable, organizationId: string, name: string): Promise<WorkspaceRow | undefined> {
  return db
    .selectFrom('workspaces')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('name_lower', '=', name.toLowerCase())
    .executeTakeFirst();
}

export interface WorkspaceFilter {
  organizationId: string;
  /** Substring of the name, case-insensitive (HCP's search[name]). */
  search?: string;
  /** Exact names, case-insensitive. */
  names?: string[];
}

export async function listWorkspaces(db: Queryable, f: WorkspaceFilter, page: { limit: number; offset: number }) {
  let base = db.selectFrom('workspaces').where('organization_id', '=', f.organizationId);
  if (f.search !== undefined) base = base.where(containsInsensitive('name', f.search));
  if (f.names) base = base.where('name_lower', 'in', f.names.map((n) => n.toLowerCase()));
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('name_lower').orderBy('id').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

/** The current state versions of the given workspaces, by workspace id. */
export async function currentStateVersions(db: Queryable, workspaces: WorkspaceRow[]): Promise<Map<string, StateVersionRow>> {
  const ids = workspaces.map((w) => w.current_state_version_id).filter((id): id is string => id !== null);
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('state_versions').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.workspace_id, r]));
}

/** Whether the newest state version of the workspace still waits for its upload (HCP refuses unlock then). */
export async function latestVersionPending(db: Queryable, workspaceId: string, now: string): Promise<boolean> {
  const latest = await db
    .selectFrom('state_versions')
    .select(['status', 'upload_expires_at'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at', 'desc')
    .orderBy('serial', 'desc')
    .limit(1)
    .executeTakeFirst();
  return latest?.status === 'pending' && latest.upload_expires_at !== null && latest.upload_expires_at > now;
}
