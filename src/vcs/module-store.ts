import type { Selectable, Updateable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { VcsModulesTable } from '../db/schema.js';

export type VcsModuleRow = Selectable<VcsModulesTable>;

export async function insertVcsModule(db: Queryable, row: VcsModuleRow): Promise<void> {
  await db.insertInto('vcs_modules').values(row).execute();
}

export async function getVcsModule(db: Queryable, moduleId: string): Promise<VcsModuleRow | undefined> {
  return db.selectFrom('vcs_modules').selectAll().where('module_id', '=', moduleId).executeTakeFirst();
}

export async function vcsModulesByIds(db: Queryable, moduleIds: string[]): Promise<VcsModuleRow[]> {
  if (moduleIds.length === 0) return [];
  return db.selectFrom('vcs_modules').selectAll().where('module_id', 'in', moduleIds).execute();
}

export async function vcsModuleByWebhook(db: Queryable, uuid: string): Promise<VcsModuleRow | undefined> {
  return db.selectFrom('vcs_modules').selectAll().where('webhook_uuid', '=', uuid).executeTakeFirst();
}

export async function vcsModulesOfToken(db: Queryable, oauthTokenId: string): Promise<VcsModuleRow[]> {
  return db.selectFrom('vcs_modules').selectAll().where('oauth_token_id', '=', oauthTokenId).execute();
}

/**
 * Updates a module's row. With onlyWhileConnectedTo, only while the row still holds that OAuth
 * token: false when it no longer does (deleted or replaced after the caller read the row).
 */
export async function updateVcsModuleRow(db: Queryable, moduleId: string, set: Updateable<VcsModulesTable>, onlyWhileConnectedTo?: string): Promise<boolean> {
  let q = db.updateTable('vcs_modules').set(set).where('module_id', '=', moduleId);
  if (onlyWhileConnectedTo !== undefined) q = q.where('oauth_token_id', '=', onlyWhileConnectedTo);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Tag-based modules with a connection, in module id order after `after` (the periodic rescan's walk). */
export async function tagModulesAfter(db: Queryable, after: string | null, limit: number): Promise<string[]> {
  let q = db.selectFrom('vcs_modules').select('module_id').where('branch', '=', '').where('oauth_token_id', 'is not', null);
  if (after !== null) q = q.where('module_id', '>', after);
  const rows = await q.orderBy('module_id').limit(limit).execute();
  return rows.map((r) => r.module_id);
}

/** Records a delivery id; false when it was recorded before (a redelivery or a replay). */
export async function recordDelivery(db: Queryable, moduleId: string, deliveryId: string, now: string): Promise<boolean> {
  const r = await db
    .insertInto('vcs_webhook_deliveries')
    .values({ module_id: moduleId, delivery_id: deliveryId, received_at: now })
    .onConflict((oc) => oc.columns(['module_id', 'delivery_id']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1;
}

export async function purgeDeliveries(db: Queryable, before: string): Promise<number> {
  const r = await db.deleteFrom('vcs_webhook_deliveries').where('received_at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
