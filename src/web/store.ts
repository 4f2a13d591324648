import type { Queryable } from '../db/index.js';
import type { OauthCodesTable, WebSessionsTable } from '../db/schema.js';

export type SessionRow = WebSessionsTable;
export type OauthCodeRow = OauthCodesTable;

export async function insertSession(db: Queryable, row: SessionRow): Promise<void> {
  await db.insertInto('web_sessions').values(row).execute();
}

export async function findSession(db: Queryable, idHash: string): Promise<SessionRow | undefined> {
  return db.selectFrom('web_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
}

export async function deleteSession(db: Queryable, idHash: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('id_hash', '=', idHash).execute();
}

/** Expired sessions are removed whenever someone signs in, and by the web sweep (sweep.ts) between sign-ins. */
export async function deleteExpiredSessions(db: Queryable, now: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('expires_at', '<=', now).execute();
}

/** Up to limit sessions that expired at or before now, oldest first. */
export async function expiredSessions(db: Queryable, now: string, limit: number): Promise<Pick<SessionRow, 'id_hash' | 'token_id' | 'owns_token'>[]> {
  return db.selectFrom('web_sessions').select(['id_hash', 'token_id', 'owns_token']).where('expires_at', '<=', now).orderBy('expires_at').limit(limit).execute();
}

export async function deleteSessions(db: Queryable, idHashes: string[]): Promise<void> {
  if (idHashes.length === 0) return;
  await db.deleteFrom('web_sessions').where('id_hash', 'in', idHashes).execute();
}

export async function insertOauthCode(db: Queryable, row: OauthCodeRow): Promise<void> {
  await db.insertInto('oauth_codes').values(row).execute();
}

/** Takes a code out of the table: whoever deletes it first is the only one who may use it. */
export async function takeOauthCode(db: Queryable, codeHash: string): Promise<OauthCodeRow | undefined> {
  return db.deleteFrom('oauth_codes').where('code_hash', '=', codeHash).returningAll().executeTakeFirst();
}

export async function deleteExpiredOauthCodes(db: Queryable, now: string): Promise<void> {
  await db.deleteFrom('oauth_codes').where('expires_at', '<=', now).execute();
}
