import type { Deps } from '../deps.js';
import { rfc3339 } from '../clock.js';
import { GenerationCache, perServer } from '../db/generations.js';
import { hashToken, sameHash } from './tokens.js';
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

interface CachedPrincipal {
  principal: Principal;
  /** The token's expiry, ms since the epoch. */
  expiresAt: number | null;
  /** When last_used_at was last written (ms since the epoch). */
  lastUsed: number;
}

/**
 * Resolved tokens by hash. A token's deletion or expiry change, and any change to its user, team
 * or organization, moves the identity generation (db/generations.ts): at once on this instance,
 * within TERRACE_CACHE_SYNC_MS on others. Expiry by the clock is checked on every use.
 */
const principalCache = perServer((deps: Deps) => new GenerationCache<string, CachedPrincipal>(deps.generations, 'identity', deps.config.cacheMaxEntries));

/**
 * The principal of a token (by its hash, hashToken) when everything about it is cached and nothing
 * needs writing (its last use was touched within the minute); undefined means "ask
 * resolvePrincipal", which also answers unknown and expired tokens.
 */
export function cachedPrincipal(deps: Deps, hash: string): Principal | undefined {
  const entry = principalCache(deps).get(hash);
  if (!entry) return undefined;
  const now = deps.clock.now().getTime();
  if (isExpired(entry, now) || touchDue(entry, now)) return undefined;
  return entry.principal;
}

/** Whether the token has expired by the clock at now (ms since the epoch). */
function isExpired(entry: CachedPrincipal, now: number): boolean {
  return entry.expiresAt !== null && entry.expiresAt <= now;
}

/** Whether last_used_at is due a write: it is touched at most once a minute, so hot read paths do not write on every request. */
function touchDue(entry: CachedPrincipal, now: number): boolean {
  return now - entry.lastUsed > LAST_USED_GRANULARITY_MS;
}

async function principalForHash(deps: Deps, hash: string): Promise<Principal | null> {
  const cache = principalCache(deps);
  const now = deps.clock.now();
  let entry = cache.get(hash);
  if (!entry) {
    const generation = cache.generation();
    const resolved = await lookupPrincipal(deps, hash);
    if (!resolved) return null;
    entry = resolved;
    cache.set(hash, entry, generation);
  }
  if (isExpired(entry, now.getTime())) return null;
  if (touchDue(entry, now.getTime())) {
    entry.lastUsed = now.getTime();
    await touchToken(deps.db, entry.principal.tokenId, rfc3339(now));
  }
  return entry.principal;
}

async function lookupPrincipal(deps: Deps, hash: string): Promise<CachedPrincipal | null> {
  const row = await tokenWithOwner(deps.db, hash);
  if (!row || !sameHash(row.token_hash, hash)) return null;
  const lastUsed = row.last_used_at ? new Date(row.last_used_at).getTime() : 0;
  // Shared by every request that presents the token: frozen, so no caller can change it for the others.
  const cached = (principal: Principal): CachedPrincipal => {
    if (principal.kind === 'user') Object.freeze(principal.user);
    return { principal: Object.freeze(principal), expiresAt: row.expired_at === null ? null : new Date(row.expired_at).getTime(), lastUsed };
  };
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
    return cached({ kind: 'user', tokenId: row.id, user });
  }
  if (row.kind === 'team' && row.team_id) {
    return cached({ kind: 'team', tokenId: row.id, teamId: row.team_id, organizationId: row.team_organization_id! });
  }
  if (row.kind === 'organization' && row.organization_id) {
    return cached({ kind: 'organization', tokenId: row.id, organizationId: row.organization_id });
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
