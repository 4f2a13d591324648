import { rfc3339 } from '../clock.js';
import type { GroupTeam } from '../config.js';
import { afterCommit, inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { joinBySingleSignOn, leaveBySingleSignOn } from '../organizations/memberships.js';
import { activeOwnerCount, getOrganizationByName, membershipOf } from '../organizations/store.js';
import { addTeamMember, isTeamMember, removeTeamMemberRows, teamByName } from './store.js';

export interface GroupSyncResult {
  /** organization/team pairs the user was added to or removed from by this sign-in. */
  added: string[];
  removed: string[];
  /** Mapped pairs that name no existing organization or team (nothing to do for them yet). */
  missing: string[];
}

/**
 * Single sign-on's group mapping: at every sign-in, the user's seats in the teams named by
 * TERRACE_OIDC_GROUP_TEAMS follow the groups claim (a seat for each team one of their groups maps
 * to, none in the other mapped teams); teams the mapping does not name are never touched.
 * Joining a team makes the user an active member of its organization; a membership made that
 * way ends when the user's last team seat there does. The last active owner is never removed
 * from an owners team this way (the organization would be left without one): that seat stays,
 * with a warning.
 *
 * There is no principal to authorize: the authority is the identity provider's claim, whose ID
 * token the caller (the web sign-in) has just verified, and the operator's mapping. Nothing else
 * may call this.
 */
export async function syncMappedTeams(deps: Deps, userId: string, groups: readonly string[], mapping: readonly GroupTeam[]): Promise<GroupSyncResult> {
  const held = new Set(groups);
  const pairs = new Map<string, { organization: string; team: string; wanted: boolean }>();
  for (const m of mapping) {
    const key = `${m.organization.toLowerCase()}/${m.team.toLowerCase()}`;
    const p = pairs.get(key) ?? { organization: m.organization, team: m.team, wanted: false };
    p.wanted ||= held.has(m.group);
    pairs.set(key, p);
  }
  const now = rfc3339(deps.clock.now());
  // PostgreSQL may run the transaction again: each attempt starts its own result, and its log
  // lines wait for the commit (db/index.ts afterCommit).
  const result = await inTransaction(deps.db, async (tx) => {
    const synced: GroupSyncResult = { added: [], removed: [], missing: [] };
    const left = new Set<string>();
    for (const p of pairs.values()) {
      const label = `${p.organization}/${p.team}`;
      const org = await getOrganizationByName(tx, p.organization);
      const team = org ? await teamByName(tx, org.id, p.team) : undefined;
      if (!org || !team) {
        synced.missing.push(label);
        continue;
      }
      const seated = await isTeamMember(tx, team.id, userId);
      if (p.wanted) {
        await joinBySingleSignOn(tx, deps, org.id, userId);
        if (!seated) {
          await addTeamMember(tx, team.id, userId, now);
          synced.added.push(label);
        }
      } else if (seated) {
        const activeOwner = team.is_owners === 1 && (await membershipOf(tx, org.id, userId))?.status === 'active';
        if (activeOwner && (await activeOwnerCount(tx, org.id)) <= 1) {
          afterCommit(tx, () =>
            deps.logger.warn({ organization: org.id, team: team.id, user: userId }, 'single sign-on: the groups claim no longer maps this user to the owners team, but they are its last active member: the seat stays until another owner is added'),
          );
          continue;
        }
        await removeTeamMemberRows(tx, team.id, [userId]);
        synced.removed.push(label);
        left.add(org.id);
      }
    }
    for (const orgId of left) await leaveBySingleSignOn(tx, deps, orgId, userId);
    return synced;
  });
  if (result.added.length || result.removed.length) deps.logger.info({ actor: 'single sign-on', user: userId, added: result.added, removed: result.removed }, 'team memberships follow the groups claim');
  if (result.missing.length) deps.logger.warn({ missing: result.missing }, 'single sign-on: TERRACE_OIDC_GROUP_TEAMS names teams that do not exist');
  return result;
}
