import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { Database } from '../db/schema.js';
import type { StateVersionRow, WorkspaceRow } from '../db/rows.js';
import { containsInsensitive } from '../organizations/store.js';

export type { StateVersionRow, WorkspaceRow };

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
  /** Every one of these must be a tag name of the workspace or the key of a binding in force on it (search[tags]). */
  tags?: string[];
  /** None of these may be (search[exclude-tags]). */
  excludeTags?: string[];
  /** Every one must be a binding in force on the workspace; a null value matches any value of the key (filter[tagged]). */
  tagged?: { key: string; value: string | null }[];
  projectId?: string;
}

type WorkspaceEb = ExpressionBuilder<Database, 'workspaces'>;

/**
 * The workspace carries the tag name, or a binding of the key is in force on it (its own, or its
 * project's): Terraform's cloud block sends the keys of its key/value tags as search[tags] too.
 */
function tagged(eb: WorkspaceEb, tag: string): Expression<SqlBool> {
  return eb.or([
    eb.exists(
      eb
        .selectFrom('workspace_tags')
        .innerJoin('tags', 'tags.id', 'workspace_tags.tag_id')
        .select('workspace_tags.tag_id')
        .whereRef('workspace_tags.workspace_id', '=', 'workspaces.id')
        .where('tags.name', '=', tag),
    ),
    eb.exists(
      eb
        .selectFrom('tag_bindings')
        .select('tag_bindings.id')
        .where('tag_bindings.key', '=', tag)
        .where((e) => e.or([e('tag_bindings.workspace_id', '=', e.ref('workspaces.id')), e('tag_bindings.project_id', '=', e.ref('workspaces.project_id'))])),
    ),
  ]);
}

/** The binding is in force: the workspace's own binding of the key has the value, or it has none and its project's has. */
function bound(eb: WorkspaceEb, key: string, value: string): Expression<SqlBool> {
  const own = eb.selectFrom('tag_bindings').select('tag_bindings.id').whereRef('tag_bindings.workspace_id', '=', 'workspaces.id').where('tag_bindings.key', '=', key);
  const inherited = eb.selectFrom('tag_bindings').select('tag_bindings.id').whereRef('tag_bindings.project_id', '=', 'workspaces.project_id').where('tag_bindings.key', '=', key);
  return eb.or([
    eb.exists(own.where('tag_bindings.value', '=', value)),
    eb.and([eb.not(eb.exists(own)), eb.exists(inherited.where('tag_bindings.value', '=', value))]),
  ]);
}

export async function listWorkspaces(db: Queryable, f: WorkspaceFilter, page: { limit: number; offset: number }) {
  let base = db.selectFrom('workspaces').where('workspaces.organization_id', '=', f.organizationId);
  if (f.search !== undefined) base = base.where(containsInsensitive('workspaces.name', f.search));
  if (f.names) base = base.where('workspaces.name_lower', 'in', f.names.map((n) => n.toLowerCase()));
  if (f.projectId !== undefined) base = base.where('workspaces.project_id', '=', f.projectId);
  for (const tag of f.tags ?? []) base = base.where((eb) => tagged(eb, tag));
  for (const tag of f.excludeTags ?? []) base = base.where((eb) => eb.not(tagged(eb, tag)));
  // A key without a value matches a single-string tag of that name too.
  for (const t of f.tagged ?? []) base = base.where((eb) => (t.value === null ? tagged(eb, t.key) : bound(eb, t.key, t.value)));
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll('workspaces').orderBy('workspaces.name_lower').orderBy('workspaces.id').limit(page.limit).offset(page.offset).execute();
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

export async function insertWorkspace(db: Queryable, ws: WorkspaceRow): Promise<void> {
  await db.insertInto('workspaces').values(ws).execute();
}

export async function updateWorkspaceRow(db: Queryable, id: string, changes: Partial<Omit<WorkspaceRow, 'id' | 'organization_id' | 'created_at'>>): Promise<void> {
  await db.updateTable('workspaces').set(changes).where('id', '=', id).execute();
}

/** State versions and their outputs go with the workspace (they cascade). */
export async function deleteWorkspaceRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('workspaces').where('id', '=', id).execute();
}

export type LockHolder = { kind: 'user' | 'team' | 'organization'; id: string };

/** Locks the workspace if it is unlocked; false when someone holds it already (so two lockers cannot both win). */
export async function lockIfUnlocked(db: Queryable, id: string, holder: LockHolder, reason: string | null, now: string): Promise<boolean> {
  const res = await db
    .updateTable('workspaces')
    .set({ locked: 1, locked_by_kind: holder.kind, locked_by_id: holder.id, lock_reason: reason, updated_at: now })
    .where('id', '=', id)
    .where('locked', '=', 0)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function unlock(db: Queryable, id: string, now: string): Promise<void> {
  await db.updateTable('workspaces').set({ locked: 0, locked_by_kind: null, locked_by_id: null, lock_reason: null, updated_at: now }).where('id', '=', id).execute();
}

/** Makes a finalized state version the workspace's current one (state calls this in its transaction). */
export async function setCurrentStateVersion(db: Queryable, workspaceId: string, stateVersionId: string, at: string): Promise<void> {
  await db.updateTable('workspaces').set({ current_state_version_id: stateVersionId, updated_at: at }).where('id', '=', workspaceId).execute();
}
