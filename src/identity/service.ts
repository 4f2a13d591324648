import { rfc3339 } from '../clock.js';
import { isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { newId, randomBase62 } from '../ids.js';
import { isSiteAdmin, principalLabel, type Principal } from './principal.js';
import { deleteToken, findUser, getUserByEmail, getUserToken, insertToken, insertUser, listUserTokens, type TokenRow, type UserRow } from './store.js';

/** The longest description a user token may carry (API and web UI alike). */
export const MAX_TOKEN_DESCRIPTION_CHARS = 256;

/** Only site admins create users; anyone else sees 404. Call before reading the body. */
export function requireSiteAdmin(p: Principal): void {
  authorize(isSiteAdmin(p), () => notFound());
}

export async function createUser(
  deps: Deps,
  p: Principal,
  a: { username: string; email: string; siteAdmin: boolean },
): Promise<UserRow> {
  requireSiteAdmin(p);
  const user: UserRow = {
    id: newId('user'),
    username: a.username,
    username_lower: a.username.toLowerCase(),
    email: a.email,
    email_lower: a.email.toLowerCase(),
    is_site_admin: a.siteAdmin ? 1 : 0,
    is_service_account: 0,
    created_at: rfc3339(deps.clock.now()),
  };
  try {
    await insertUser(deps.db, user);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const taken = await findUser(deps.db, a.username);
    throw taken
      ? unprocessable(`username ${quoteValue(a.username)} is already taken`, '/data/attributes/username')
      : unprocessable(`email ${quoteValue(a.email)} is already in use`, '/data/attributes/email');
  }
  deps.logger.info({ actor: principalLabel(p), user: user.id, username: user.username }, 'user created');
  return user;
}

/** A user whose tokens the caller may manage: their own, or anyone's for site admins; 404 otherwise. */
export async function userForTokens(deps: Deps, p: Principal, userId: string): Promise<UserRow> {
  const self = p.kind === 'user' && (p.user.id === userId || p.user.username.toLowerCase() === userId.toLowerCase());
  authorize(self || isSiteAdmin(p), () => notFound());
  const user = await findUser(deps.db, userId);
  if (!user) throw notFound();
  return user;
}

export async function createUserToken(
  deps: Deps,
  p: Principal,
  userId: string,
  a: { description: string | null; expiredAt: string | null },
): Promise<{ row: TokenRow; token: string }> {
  const user = await userForTokens(deps, p, userId);
  const now = deps.clock.now();
  let expiredAt: string | null = null;
  if (a.expiredAt) {
    const t = new Date(a.expiredAt);
    if (t.getTime() <= now.getTime()) throw unprocessable('expired-at must be in the future', '/data/attributes/expired-at');
    expiredAt = rfc3339(t);
  }
  const created = await insertToken(deps.db, {
    kind: 'user',
    userId: user.id,
    description: a.description,
    createdBy: p.kind === 'user' ? p.user.id : null,
    expiredAt,
    now: rfc3339(now),
  });
  deps.logger.info({ actor: principalLabel(p), token: created.row.id, user: user.id }, 'user token created');
  return created;
}

export async function userTokens(deps: Deps, p: Principal, userId: string, page: { limit: number; offset: number }) {
  const user = await userForTokens(deps, p, userId);
  return listUserTokens(deps.db, user.id, page);
}

/** A user token the caller owns (or any, for site admins); 404 otherwise. */
export async function ownedUserToken(deps: Deps, p: Principal, id: string): Promise<TokenRow> {
  const row = await getUserToken(deps.db, id);
  authorize(row !== undefined && row.user_id !== null && ((p.kind === 'user' && p.user.id === row.user_id) || isSiteAdmin(p)), () => notFound());
  return row!;
}

export async function deleteUserToken(deps: Deps, p: Principal, id: string): Promise<void> {
  const row = await ownedUserToken(deps, p, id);
  await deleteToken(deps.db, row.id);
  deps.logger.info({ actor: principalLabel(p), token: row.id }, 'user token deleted');
}

/**
 * Single sign-on: the user an identity provider vouched for (its ID token verified by the
 * caller), found by e-mail or created on first sign-in with the provider's preferred username
 * (made unique with a suffix when taken). No principal acts here: the verified token is the
 * authority, as the site-admin token is for createUser.
 */
export async function userForSingleSignOn(deps: Deps, claims: { email: string; username: string }): Promise<UserRow> {
  const existing = await getUserByEmail(deps.db, claims.email);
  if (existing) return existing;
  const base = claims.username.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[-.]+|[-.]+$/g, '').slice(0, 40) || claims.email.split('@')[0]!.replace(/[^A-Za-z0-9_.-]+/g, '-') || 'user';
  for (let attempt = 0; attempt < 20; attempt++) {
    const username = attempt === 0 ? base : `${base}-${randomBase62(4).toLowerCase()}`;
    const user: UserRow = {
      id: newId('user'),
      username,
      username_lower: username.toLowerCase(),
      email: claims.email,
      email_lower: claims.email.toLowerCase(),
      is_site_admin: 0,
      is_service_account: 0,
      created_at: rfc3339(deps.clock.now()),
    };
    try {
      await insertUser(deps.db, user);
      deps.logger.info({ user: user.id, username }, 'user provisioned by single sign-on');
      return user;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const raced = await getUserByEmail(deps.db, claims.email);
      if (raced) return raced;
    }
  }
  throw unprocessable(`no free username near ${quoteValue(base)}; ask an administrator to create the user`);
}

/** A token for one web session alone (single sign-on): it expires with the session. */
export async function sessionToken(deps: Deps, user: UserRow, expiredAt: string): Promise<Extract<Principal, { kind: 'user' }>> {
  const { row } = await insertToken(deps.db, { kind: 'user', userId: user.id, description: 'web session (single sign-on)', createdBy: user.id, expiredAt, now: rfc3339(deps.clock.now()) });
  return { kind: 'user', tokenId: row.id, user };
}
