import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A signed-in browser. The cookie holds a random id; only its hash is stored, so a copy of the
  // database opens no session. A session acts as the user token it was opened with (pasted at
  // sign-in, or issued for it by single sign-on): revoking that token ends the session with it.
  await db.schema
    .createTable('web_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('token_id', 'text', (c) => c.notNull().references('tokens.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    // 1 when the token was issued for this session alone (single sign-on): sign-out deletes it.
    .addColumn('owns_token', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('web_sessions_expires_at').on('web_sessions').column('expires_at').execute();
  await db.schema.createIndex('web_sessions_token_id').on('web_sessions').column('token_id').execute();

  // terraform login: an authorization code granted on the consent page, exchanged once for a new
  // user token at the token endpoint. Stored hashed, bound to the client's redirect URI and PKCE
  // challenge, and short-lived.
  await db.schema
    .createTable('oauth_codes')
    .addColumn('code_hash', 'text', (c) => c.primaryKey())
    .addColumn('token_id', 'text', (c) => c.notNull().references('tokens.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_codes_expires_at').on('oauth_codes').column('expires_at').execute();
}
