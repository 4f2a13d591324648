import type { Selectable } from 'kysely';
import { stateVersionKeys } from '../blobs/layout.js';
import type { Queryable } from '../db/index.js';
import type { StateVersionOutputsTable } from '../db/schema.js';
import type { StateVersionRow } from '../db/rows.js';

export type { StateVersionRow };
export type OutputRow = Selectable<StateVersionOutputsTable>;

export async function getStateVersion(db: Queryable, id: string): Promise<StateVersionRow | undefined> {
  return db.selectFrom('state_versions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A workspace's state versions, newest first. */
export async function listStateVersions(db: Queryable, workspaceId: string, page: { limit: number; offset: number }) {
  const base = db.selectFrom('state_versions').where('workspace_id', '=', workspaceId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('serial', 'desc')
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return { rows, total: Number(n) };
}

export async function listOutputs(db: Queryable, stateVersionId: string, page?: { limit: number; offset: number }): Promise<OutputRow[]> {
  let q = db.selectFrom('state_version_outputs').selectAll().where('state_version_id', '=', stateVersionId).orderBy('position');
  if (page) q = q.limit(page.limit).offset(page.offset);
  return q.execute();
}

export async function countOutputs(db: Queryable, stateVersionId: string): Promise<number> {
  const { n } = await db
    .selectFrom('state_version_outputs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('state_version_id', '=', stateVersionId)
    .executeTakeFirstOrThrow();
  return Number(n);
}

export async function outputIds(db: Queryable, stateVersionId: string): Promise<string[]> {
  const rows = await db.selectFrom('state_version_outputs').select('id').where('state_version_id', '=', stateVersionId).orderBy('position').execute();
  return rows.map((r) => r.id);
}

export async function getOutput(db: Queryable, id: string): Promise<OutputRow | undefined> {
  return db.selectFrom('state_version_outputs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Where a state version's bytes live: under its workspace, under its organization. */
export function stateBlobKeys(ws: { id: string; organization_id: string }, svId: string) {
  return stateVersionKeys(ws.organization_id, ws.id, svId);
}

export function blobKeysOf(sv: Pick<StateVersionRow, 'blob_key' | 'json_state_blob_key' | 'json_outputs_blob_key'>): string[] {
  return [sv.blob_key, sv.json_state_blob_key, sv.json_outputs_blob_key].filter((k): k is string => k !== null);
}

/**
 * Deletes up to limit finalized state versions of the organization's workspaces created before
 * olderThan, never a workspace's current one, with their outputs, in the caller's transaction.
 * Pending versions are left to their upload expiry. Returns what went and the blobs it leaves.
 */
export async function deleteOldStateVersions(tx: Queryable, organizationId: string, olderThan: string, limit: number) {
  const doomed = await tx
    .selectFrom('state_versions as sv')
    .innerJoin('workspaces as w', 'w.id', 'sv.workspace_id')
    .select(['sv.id', 'sv.blob_key', 'sv.json_state_blob_key', 'sv.json_outputs_blob_key'])
    .where('w.organization_id', '=', organizationId)
    .where('sv.status', '=', 'finalized')
    .where('sv.created_at', '<', olderThan)
    .where((eb) => eb.or([eb('w.current_state_version_id', 'is', null), eb('w.current_state_version_id', '!=', eb.ref('sv.id'))]))
    .limit(limit)
    .execute();
  if (doomed.length === 0) return { ids: [] as string[], outputs: 0, blobKeys: [] as string[] };
  const ids = doomed.map((r) => r.id);
  const outputs = await tx.deleteFrom('state_version_outputs').where('state_version_id', 'in', ids).executeTakeFirst();
  await tx.deleteFrom('state_versions').where('id', 'in', ids).execute();
  return { ids, outputs: Number(outputs.numDeletedRows), blobKeys: doomed.flatMap(blobKeysOf) };
}

/** Moves resources_processed from one value to another; false when it no longer had the first. */
export async function markResourcesProcessed(db: Queryable, id: string, from: number, to: number): Promise<boolean> {
  const res = await db.updateTable('state_versions').set({ resources_processed: to }).where('id', '=', id).where('resources_processed', '=', from).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
