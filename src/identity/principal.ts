import type { Deps } from '../deps.js';
import { rfc3339 } from '../clock.js';
import { hashToken, sameHash, tokenExpired } from './tokens.js';
import { getToken, tokenWithOwner, touchToken, type UserRow } from './store.js';

/** Who is calling: resolved once per request from the bearer token. */
export type Principal =
  | { kind: 'user'; tokenId: string; user: UserRow }
  | { kind: 'team'; tokenId: string; teamId: string; organizationId: string }
  | { kind: 'organization'; tokenId: string; organizationId: string };

const LAST_USED_GRANULARITY_MS = 60_000;

/** The principal a token stands for, or null if the token is unknown, expired or orphaned. */
export async function resolvePrincipal(deps: Deps, presented: string): Promise<Principal | null> {
  return principalForHash(deps, hashToken(presented));
}

/** The principal of the token with this id (a web session acts as the token it was opened with). */
export async function principalForTokenId(deps: Deps, tokenId: string): Promise<Principal | null> {
  const token = await getToken(deps.db, tokenId);
  return token ? principalForHash(deps, token.token_hash) : null;
}

async function principalForHash(deps: Deps, hash: string): Promise<Principal | null> {
  const row = await tokenWithOwner(deps.db, hash);
  const now = deps.clock.now();
  if (!row || !sameHash(row.token_hash, hash) || tokenExpired(row, now)) return null;
  // Touch last_used_at at most once a minute so hot read paths do not write on every request.
  if (!row.last_used_at || now.getTime() - new Date(row.last_used_at).getTime() > LAST_USED_GRANULARITY_MS) {
    await touchToken(deps.db, row.id, rfc3339(now));
  }
  if (row.kind === 'user' && row.user_id) {
    const user: UserRow = {
      id: row.user_id,
      username: row.username!,
      username_lower: row.username_lower!,
      email: row.email!,
      email_lower: row.email_lower!,
      is_site_admin: row.is_site_admin!,
      is_service_account: row.is_service_account!,
      created_at: row.user_created_at!,
    };
    return { kind: 'user', tokenId: row.id, user };
  }
  if (row.kind === 'team' && row.team_id) {
    return { kind: 'team', tokenId: row.id, teamId: row.team_id, organizationId: row.team_organization_id! };
  }
  if (row.kind === 'organization' && row.organization_id) {
    return { kind: 'organization', tokenId: row.id, organizationId: row.organization_id };
  }
  return null;
}

export function isSiteAdmin(p: Principal | null): boolean {
  return p?.kind === 'user' && p.user.is_site_admin === 1;
}

/** How a principal appears in the audit log lines. */
export function principalLabel(p: Principal): string {
  if (p.kind === 'user') return `user:${p.user.id}`;
  if (p.kind === 'team') return `team:${p.teamId}`;
  return `organization:${p.organizationId}`;
}
