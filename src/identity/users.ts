import { hotQuery, type Queryable } from '../db/index.js';
import type { UsersTable } from '../db/schema.js';

export type UserRow = UsersTable;

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
