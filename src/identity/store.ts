import { hotQuery, inTransaction, type Db, type Queryable } from '../db/index.js';
import type { TokenKind, TokensTable, UsersTable } from '../db/schema.js';
import { newId } from '../ids.js';
import { generateToken, hashToken } from './tokens.js';

export type UserRow = UsersTable;
export type TokenRow = TokensTable;

const userByIdQuery = hotQuery((db) => db.selectFrom('users').selectAll().where('id', '=', ''));

export async function getUserById(db: Queryable, id: string): Promise<UserRow | undefined> {
  return (await userByIdQuery(db, [id]))[0];
}

export async function getUserByUsername(db: Queryable, username: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('username_lower', '=', username.toLowerCase()).executeTakeFirst();
}

/** Resolves a user named by id ("user-…") or by username, as go-tfe sends usernames. */
export async function findUser(db: Queryable, idOrUsername: string): Promise<UserRow | undefined> {
  if (idOrUsername.startsWith('user-')) {
    const byId = await getUserById(db, idOrUsername);
    if (byId) return byId;
  }
  return getUserByUsername(db, idOrUsername);
}

/** The earliest site admin, if any (start-up attaches the bootstrap token to it). */
export async function firstSiteAdmin(db: Queryable): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('is_site_admin', '=', 1).orderBy('created_at').executeTakeFirst();
}

export async function insertUser(db: Queryable, user: UserRow): Promise<void> {
  await db.insertInto('users').values(user).execute();
}

export async function getUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email_lower', '=', email.toLowerCase()).executeTakeFirst();
}

// ---- tokens ----

export interface NewToken {
  kind: TokenKind;
  userId?: string | null;
  teamId?: string | null;
  organizationId?: string | null;
  description?: string | null;
  createdBy?: string | null;
  expiredAt?: string | null;
  now: string;
}

/** Stores only the hash; the plaintext is returned once to the caller and never kept. */
export async function insertToken(db: Queryable, t: NewToken): Promise<{ row: TokenRow; token: string }> {
  const token = generateToken();
  const row: TokenRow = {
    id: newId('at'),
    kind: t.kind,
    user_id: t.userId ?? null,
    team_id: t.teamId ?? null,
    organization_id: t.organizationId ?? null,
    description: t.description ?? null,
    token_hash: hashToken(token),
    created_by: t.createdBy ?? null,
    created_at: t.now,
    last_used_at: null,
    expired_at: t.expiredAt ?? null,
  };
  await db.insertInto('tokens').values(row).execute();
  return { row, token };
}

export async function getToken(db: Queryable, id: string): Promise<TokenRow | undefined> {
  return db.selectFrom('tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function setTokenHash(db: Queryable, id: string, hash: string): Promise<void> {
  await db.updateTable('tokens').set({ token_hash: hash }).where('id', '=', id).execute();
}

export async function deleteToken(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('tokens').where('id', '=', id).execute();
}

/** A user token by id (team and organization tokens are not addressed by id). */
export async function getUserToken(db: Queryable, id: string): Promise<TokenRow | undefined> {
  return db.selectFrom('tokens').selectAll().where('id', '=', id).where('kind', '=', 'user').executeTakeFirst();
}

export async function listUserTokens(db: Queryable, userId: string, page: { limit: number; offset: number }) {
  const base = db.selectFrom('tokens').where('kind', '=', 'user').where('user_id', '=', userId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('created_at').orderBy('id').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

/** Whose token a team or organization token is (one each, the legacy endpoints). */
export type TokenOwner = { kind: 'team'; teamId: string } | { kind: 'organization'; organizationId: string };

export async function findOwnedToken(db: Queryable, owner: TokenOwner): Promise<TokenRow | undefined> {
  const q = db.selectFrom('tokens').selectAll().where('kind', '=', owner.kind);
  return (owner.kind === 'team' ? q.where('team_id', '=', owner.teamId) : q.where('organization_id', '=', owner.organizationId)).executeTakeFirst();
}

/** Replaces the owner's token with a new one in one transaction. */
export async function replaceOwnedToken(
  db: Db,
  owner: TokenOwner,
  t: Pick<NewToken, 'description' | 'createdBy' | 'expiredAt' | 'now'>,
): Promise<{ row: TokenRow; token: string }> {
  return inTransaction(db, async (tx) => {
    const del = tx.deleteFrom('tokens').where('kind', '=', owner.kind);
    await (owner.kind === 'team' ? del.where('team_id', '=', owner.teamId) : del.where('organization_id', '=', owner.organizationId)).execute();
    return insertToken(tx, {
      ...t,
      kind: owner.kind,
      teamId: owner.kind === 'team' ? owner.teamId : null,
      organizationId: owner.kind === 'organization' ? owner.organizationId : null,
    });
  });
}

// Token, its user and its team in one statement: this runs on every authenticated request.
const tokenWithOwnerQuery = hotQuery((db) =>
  db
    .selectFrom('tokens')
    .leftJoin('users', 'users.id', 'tokens.user_id')
    .leftJoin('teams', 'teams.id', 'tokens.team_id')
    .select([
      'tokens.id',
      'tokens.kind',
      'tokens.token_hash',
      'tokens.organization_id',
      'tokens.last_used_at',
      'tokens.expired_at',
      'users.id as user_id',
      'users.username',
      'users.username_lower',
      'users.email',
      'users.email_lower',
      'users.is_site_admin',
      'users.is_service_account',
      'users.created_at as user_created_at',
      'teams.id as team_id',
      'teams.organization_id as team_organization_id',
    ])
    .where('tokens.token_hash', '=', ''),
);

/** A token by hash with its user's and team's columns: what resolving a principal needs. */
export async function tokenWithOwner(db: Queryable, tokenHash: string) {
  return (await tokenWithOwnerQuery(db, [tokenHash]))[0];
}

export async function touchToken(db: Queryable, id: string, at: string): Promise<void> {
  await db.updateTable('tokens').set({ last_used_at: at }).where('id', '=', id).execute();
}

// ---- installation settings (the bootstrap token's id) ----

export async function getSetting(db: Queryable, key: string): Promise<string | undefined> {
  return (await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst())?.value;
}

export async function putSetting(db: Queryable, key: string, value: string): Promise<void> {
  await db
    .insertInto('settings')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
    .execute();
}
