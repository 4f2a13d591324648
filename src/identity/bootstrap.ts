import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { newId } from '../ids.js';
import { insertToken } from './store.js';
import { hashToken } from './tokens.js';

const ADMIN_TOKEN_SETTING = 'admin_token_id';
const ADMIN_DESCRIPTION = 'site admin token (TERRACE_ADMIN_TOKEN)';

/**
 * Makes sure a site-admin user and its bootstrap token exist. With TERRACE_ADMIN_TOKEN set, that
 * value is (re)registered; otherwise a token is generated on first start and returned once so the
 * caller can print it. Only its hash is stored. Returns the plaintext only when newly generated.
 */
export async function ensureAdminToken(deps: Deps): Promise<string | null> {
  const now = rfc3339(deps.clock.now());
  return inTransaction(deps.db, async (tx) => {
    const setting = await tx.selectFrom('settings').select('value').where('key', '=', ADMIN_TOKEN_SETTING).executeTakeFirst();
    const existing = setting
      ? await tx.selectFrom('tokens').selectAll().where('id', '=', setting.value).executeTakeFirst()
      : undefined;
    const configured = deps.config.adminToken;

    if (existing && configured) {
      const hash = hashToken(configured);
      if (existing.token_hash !== hash) {
        await tx.updateTable('tokens').set({ token_hash: hash }).where('id', '=', existing.id).execute();
      }
      return null;
    }
    if (existing) return null;

    let admin = await tx.selectFrom('users').selectAll().where('is_site_admin', '=', 1).orderBy('created_at').executeTakeFirst();
    if (!admin) {
      const taken = await tx.selectFrom('users').select('id').where('username_lower', '=', 'admin').executeTakeFirst();
      const username = taken ? `admin-${newId('user').slice(5, 11).toLowerCase()}` : 'admin';
      admin = {
        id: newId('user'),
        username,
        username_lower: username.toLowerCase(),
        email: `${username}@terrace.invalid`,
        email_lower: `${username}@terrace.invalid`,
        is_site_admin: 1,
        is_service_account: 0,
        created_at: now,
      };
      await tx.insertInto('users').values(admin).execute();
    }
    const { row, token } = await insertToken(tx, { kind: 'user', userId: admin.id, description: ADMIN_DESCRIPTION, now });
    if (configured) {
      await tx.updateTable('tokens').set({ token_hash: hashToken(configured) }).where('id', '=', row.id).execute();
    }
    await tx
      .insertInto('settings')
      .values({ key: ADMIN_TOKEN_SETTING, value: row.id })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: row.id }))
      .execute();
    return configured ? null : token;
  });
}
