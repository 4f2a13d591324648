import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { OauthClientsTable, OauthTokensTable, VcsEventsTable } from '../db/schema.js';
import type { Secrets } from '../secrets.js';

export type OAuthClientRow = Selectable<OauthClientsTable>;
export type OAuthTokenRow = Selectable<OauthTokensTable>;
export type VcsEventRow = Selectable<VcsEventsTable>;

// ---- sealed values: the only place they are sealed or opened ----

export function sealSecret(secrets: Secrets, value: string | null | undefined): string | null {
  return value === null || value === undefined || value === '' ? null : secrets.encrypt(value);
}

export function openSecret(secrets: Secrets, sealed: string | null): string | null {
  return sealed === null ? null : secrets.decrypt(sealed);
}

// ---- OAuth clients ----

export async function getOAuthClient(db: Queryable, id: string): Promise<OAuthClientRow | undefined> {
  return db.selectFrom('oauth_clients').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listOAuthClients(db: Queryable, organizationId: string, page?: { limit: number; offset: number }) {
  const base = db.selectFrom('oauth_clients').where('organization_id', '=', organizationId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  let q = base.selectAll().orderBy('created_at').orderBy('id');
  if (page) q = q.limit(page.limit).offset(page.offset);
  return { rows: await q.execute(), total: Number(n) };
}

/** Name, service provider and id of the clients with these ids (the vcs-events include). */
export async function oauthClientSummaries(db: Queryable, organizationId: string, ids: string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('oauth_clients')
    .select(['id', 'name', 'service_provider'])
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .orderBy('id')
    .execute();
}

export async function insertOAuthClient(db: Queryable, row: OAuthClientRow): Promise<void> {
  await db.insertInto('oauth_clients').values(row).execute();
}

export async function updateOAuthClientRow(
  db: Queryable,
  id: string,
  changes: Partial<Omit<OAuthClientRow, 'id' | 'organization_id' | 'created_at' | 'service_provider'>>,
): Promise<void> {
  await db.updateTable('oauth_clients').set(changes).where('id', '=', id).execute();
}

export async function deleteOAuthClientRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('oauth_clients').where('id', '=', id).execute();
}

/** The project ids of each client, by client id. */
export async function projectsOfClients(db: Queryable, clientIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(clientIds.map((id) => [id, []]));
  if (clientIds.length === 0) return out;
  const rows = await db.selectFrom('oauth_client_projects').selectAll().where('oauth_client_id', 'in', clientIds).orderBy('project_id').execute();
  for (const r of rows) out.get(r.oauth_client_id)?.push(r.project_id);
  return out;
}

export async function replaceClientProjects(db: Queryable, clientId: string, projectIds: string[]): Promise<void> {
  await db.deleteFrom('oauth_client_projects').where('oauth_client_id', '=', clientId).execute();
  if (projectIds.length > 0) {
    await db.insertInto('oauth_client_projects').values(projectIds.map((project_id) => ({ oauth_client_id: clientId, project_id }))).execute();
  }
}

export async function addClientProjects(db: Queryable, clientId: string, projectIds: string[]): Promise<void> {
  if (projectIds.length === 0) return;
  await db
    .insertInto('oauth_client_projects')
    .values(projectIds.map((project_id) => ({ oauth_client_id: clientId, project_id })))
    .onConflict((oc) => oc.columns(['oauth_client_id', 'project_id']).doNothing())
    .execute();
}

export async function removeClientProjects(db: Queryable, clientId: string, projectIds: string[]): Promise<void> {
  if (projectIds.length === 0) return;
  await db.deleteFrom('oauth_client_projects').where('oauth_client_id', '=', clientId).where('project_id', 'in', projectIds).execute();
}

/** Which of these ids are projects of the organization. */
export async function projectIdsInOrganization(db: Queryable, organizationId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('projects').select('id').where('organization_id', '=', organizationId).where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

// ---- OAuth tokens ----

export async function getOAuthToken(db: Queryable, id: string): Promise<OAuthTokenRow | undefined> {
  return db.selectFrom('oauth_tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The token and its client in one read (background work and connection lookups). */
export async function tokenWithClient(db: Queryable, tokenId: string) {
  const token = await getOAuthToken(db, tokenId);
  if (!token) return undefined;
  const client = await getOAuthClient(db, token.oauth_client_id);
  return client ? { token, client } : undefined;
}

/** The tokens of each client, by client id (at most one each). */
export async function tokensOfClients(db: Queryable, clientIds: string[]): Promise<Map<string, OAuthTokenRow[]>> {
  const out = new Map<string, OAuthTokenRow[]>(clientIds.map((id) => [id, []]));
  if (clientIds.length === 0) return out;
  const rows = await db.selectFrom('oauth_tokens').selectAll().where('oauth_client_id', 'in', clientIds).orderBy('created_at').orderBy('id').execute();
  for (const r of rows) out.get(r.oauth_client_id)?.push(r);
  return out;
}

export async function listOAuthTokens(db: Queryable, organizationId: string, page?: { limit: number; offset: number }) {
  const base = db.selectFrom('oauth_tokens').where('organization_id', '=', organizationId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  let q = base.selectAll().orderBy('created_at').orderBy('id');
  if (page) q = q.limit(page.limit).offset(page.offset);
  return { rows: await q.execute(), total: Number(n) };
}

export async function insertOAuthToken(db: Queryable, row: OAuthTokenRow): Promise<void> {
  await db.insertInto('oauth_tokens').values(row).execute();
}

export async function updateOAuthTokenRow(
  db: Queryable,
  id: string,
  changes: Partial<Pick<OAuthTokenRow, 'token_sealed' | 'ssh_key_sealed' | 'service_provider_user' | 'updated_at'>>,
): Promise<void> {
  await db.updateTable('oauth_tokens').set(changes).where('id', '=', id).execute();
}

export async function deleteOAuthTokenRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('oauth_tokens').where('id', '=', id).execute();
}

// ---- VCS events ----

export async function insertVcsEvent(db: Queryable, row: VcsEventRow): Promise<void> {
  await db.insertInto('vcs_events').values(row).execute();
}

export interface VcsEventFilter {
  organizationId: string;
  /** RFC 3339, inclusive. */
  from: string;
  /** RFC 3339, inclusive. */
  to: string;
  levels?: ('info' | 'error')[];
  oauthClientIds?: string[];
}

export async function listVcsEvents(db: Queryable, f: VcsEventFilter, page: { limit: number; offset: number }) {
  let base = db
    .selectFrom('vcs_events')
    .where('organization_id', '=', f.organizationId)
    .where('created_at', '>=', f.from)
    .where('created_at', '<=', f.to);
  if (f.levels) base = base.where('level', 'in', f.levels);
  if (f.oauthClientIds) base = base.where('oauth_client_id', 'in', f.oauthClientIds);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

/** Deletes at most limit events created before the cutoff; returns how many went. */
export async function purgeVcsEvents(db: Queryable, before: string, limit: number): Promise<number> {
  const ids = await db.selectFrom('vcs_events').select('id').where('created_at', '<', before).orderBy('created_at').limit(limit).execute();
  if (ids.length === 0) return 0;
  await db.deleteFrom('vcs_events').where('id', 'in', ids.map((r) => r.id)).execute();
  return ids.length;
}
