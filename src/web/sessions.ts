import { randomBytes } from 'node:crypto';
import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { ApiError, unauthorized } from '../http/errors.js';
import { principalForTokenId, principalLabel, resolvePrincipal, type Principal } from '../identity/principal.js';
import { deleteToken } from '../identity/store.js';
import { hashToken } from '../identity/tokens.js';
import { deleteExpiredSessions, deleteSession, findSession, insertSession } from './store.js';

export type UserPrincipal = Extract<Principal, { kind: 'user' }>;

/** A signed-in browser: acts as the user token it was opened with, until it expires. */
export interface WebSession {
  idHash: string;
  principal: UserPrincipal;
  expiresAt: string;
  ownsToken: boolean;
}

/** The longest session cookie accepted: anything longer is not one of ours and is not looked up. */
const MAX_COOKIE_CHARS = 100;

/** 256 random bits, URL-safe: session ids, CSRF cookies, authorization codes. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export const forbidden = (detail: string) => new ApiError(403, 'forbidden', detail);

/** Sign-in with a pasted API token (installs without an identity provider). Returns the cookie value. */
export async function signInWithToken(deps: Deps, presented: string): Promise<string> {
  const principal = presented.trim() === '' ? null : await resolvePrincipal(deps, presented.trim());
  if (!principal) throw unauthorized('that API token is invalid or has expired: paste a current user token (create one with the API or the terrace command)');
  if (principal.kind !== 'user') {
    throw unauthorized('team and organization tokens cannot sign in to the web UI: paste a user token');
  }
  return openSession(deps, principal, { ownsToken: false });
}

/** Opens a session for a user principal; ownsToken: the token was issued for this session alone. */
export async function openSession(deps: Deps, principal: UserPrincipal, opts: { ownsToken: boolean }): Promise<string> {
  const id = newSecret();
  const now = deps.clock.now();
  await inTransaction(deps.db, async (tx) => {
    await deleteExpiredSessions(tx, rfc3339(now));
    await insertSession(tx, {
      id_hash: hashToken(id),
      token_id: principal.tokenId,
      user_id: principal.user.id,
      owns_token: opts.ownsToken ? 1 : 0,
      created_at: rfc3339(now),
      expires_at: rfc3339(now.getTime() + deps.config.sessionTtlSeconds * 1000),
    });
  });
  deps.logger.info({ actor: principalLabel(principal) }, 'web session opened');
  return id;
}

/** The session a cookie names, or null when there is none, it expired, or its token is gone. */
export async function currentSession(deps: Deps, cookie: string | undefined): Promise<WebSession | null> {
  if (!cookie || cookie.length > MAX_COOKIE_CHARS) return null;
  const row = await findSession(deps.db, hashToken(cookie));
  if (!row || new Date(row.expires_at).getTime() <= deps.clock.now().getTime()) return null;
  const principal = await principalForTokenId(deps, row.token_id);
  if (!principal || principal.kind !== 'user') return null;
  return { idHash: row.id_hash, principal, expiresAt: row.expires_at, ownsToken: row.owns_token === 1 };
}

/** Ends the session; a token issued for it alone ends with it. */
export async function signOut(deps: Deps, session: WebSession): Promise<void> {
  if (session.ownsToken) await deleteToken(deps.db, session.principal.tokenId);
  else await deleteSession(deps.db, session.idHash);
  deps.logger.info({ actor: principalLabel(session.principal) }, 'web session closed');
}

/** The synchronizer token of a session's forms: derived from the session, so nothing is stored. */
export function csrfToken(deps: Deps, session: WebSession): string {
  return deps.secrets.sign('web-csrf', session.idHash);
}

export function validCsrf(deps: Deps, session: WebSession, given: string | undefined): boolean {
  return typeof given === 'string' && given.length < 200 && deps.secrets.verify('web-csrf', session.idHash, given);
}

/** Before sign-in there is no session: the form carries a signature of a random cookie (double submit). */
export function preSessionCsrf(deps: Deps, cookie: string): string {
  return deps.secrets.sign('web-csrf-pre', cookie);
}

export function validPreSessionCsrf(deps: Deps, cookie: string | undefined, given: string | undefined): boolean {
  return !!cookie && cookie.length <= MAX_COOKIE_CHARS && typeof given === 'string' && given.length < 200 && deps.secrets.verify('web-csrf-pre', cookie, given);
}
