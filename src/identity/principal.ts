import type { Deps } from '../deps.js';
import { rfc3339 } from '../clock.js';
import { findToken, tokenExpired } from './tokens.js';
import { getUserById, type UserRow } from './users.js';

/** Who is calling: resolved once per request from the bearer token. */
export type Principal =
  | { kind: 'user'; tokenId: string; user: UserRow }
  | { kind: 'team'; tokenId: string; teamId: string; organizationId: string }
  | { kind: 'organization'; tokenId: string; organizationId: string };

const LAST_USED_GRANULARITY_MS = 60_000;

/** The principal a token stands for, or null if the token is unknown, expired or orphaned. */
export async function resolvePrincipal(deps: Deps, presented: string): Promise<Principal | null> {
  const row = await findToken(deps.db, presented);
  const now = deps.clock.now();
  if (!row || tokenExpired(row, now)) return null;
  // Touch last_used_at at most once a minute so hot read paths do not write on every request.
  if (!row.last_used_at || now.getTime() - new Date(row.last_used_at).getTime() > LAST_USED_GRANULARITY_MS) {
    await deps.db.updateTable('tokens').set({ last_used_at: rfc3339(now) }).where('id', '=', row.id).execute();
  }
  if (row.kind === 'user' && row.user_id) {
    const user = await getUserById(deps.db, row.user_id);
    return user ? { kind: 'user', tokenId: row.id, user } : null;
  }
  if (row.kind === 'team' && row.team_id) {
    const team = await deps.db.selectFrom('teams').select(['id', 'organization_id']).where('id', '=', row.team_id).executeTakeFirst();
    return team ? { kind: 'team', tokenId: row.id, teamId: team.id, organizationId: team.organization_id } : null;
  }
  if (row.kind === 'organization' && row.organization_id) {
    return { kind: 'organization', tokenId: row.id, organizationId: row.organization_id };
  }
  return null;
}

export function isSiteAdmin(p: Principal | null): boolean {
  return p?.kind === 'user' && p.user.is_site_admin === 1;
}
