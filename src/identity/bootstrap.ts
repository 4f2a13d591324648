import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { newId } from '../ids.js';
import { firstSiteAdmin, getSetting, getToken, getUserByUsername, insertToken, insertUser, putSetting, setTokenHash } from './store.js';
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
    const tokenId = await getSetting(tx, ADMIN_TOKEN_SETTING);
    const existing = tokenId !== undefined ? await getToken(tx, tokenId) : undefined;
    const configured = deps.config.adminToken;

    if (existing && configured) {
      const hash = hashToken(configured);
      if (existing.token_hash !== hash) {
        await setTokenHash(tx, existing.id, hash);
      }
      return null;
    }
    if (existing) return null;

    let admin = await firstSiteAdmin(tx);
    if (!admin) {
      const taken = await getUserByUsername(tx, 'admin');
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
      await insertUser(tx, admin);
    }
    const { row, token } = await insertToken(tx, { kind: 'user', userId: admin.id, description: ADMIN_DESCRIPTION, now });
    if (configured) {
      await setTokenHash(tx, row.id, hashToken(configured));
    }
    await putSetting(tx, ADMIN_TOKEN_SETTING, row.id);
    return configured ? null : token;
  });
}
