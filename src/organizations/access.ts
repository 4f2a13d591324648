import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { OrganizationsTable } from '../db/schema.js';
import { isSiteAdmin, type Principal } from '../identity/principal.js';
import {
  activeOrganizationIds,
  consumableByOrganization,
  consumableByUser,
  memberTeamGrants,
  membershipOf,
  teamGrants,
  userTeamIds,
} from './store.js';


export type OrganizationRow = Selectable<OrganizationsTable>;

/** Organization-level permissions a team can hold (HCP's organization-access names). */
export const TEAM_PERMISSIONS = ['manage-modules', 'manage-projects', 'manage-run-tasks', 'manage-vcs-settings', 'manage-workspaces', 'read-state-outputs'] as const;
export type TeamPermission = (typeof TEAM_PERMISSIONS)[number];

/** What a principal may do in one organization. Every check in every domain starts here. */
export interface OrgAccess {
  /** May see the organization at all (anything else is 404). */
  member: boolean;
  /** Site admin, owners-team member, or owners-team token. */
  owner: boolean;
  organizationToken: boolean;
  permissions: Record<TeamPermission, boolean>;
}

const none = (): Record<TeamPermission, boolean> =>
  Object.fromEntries(TEAM_PERMISSIONS.map((p) => [p, false])) as Record<TeamPermission, boolean>;
const all = (): Record<TeamPermission, boolean> =>
  Object.fromEntries(TEAM_PERMISSIONS.map((p) => [p, true])) as Record<TeamPermission, boolean>;

export const NO_ACCESS: OrgAccess = Object.freeze({ member: false, owner: false, organizationToken: false, permissions: none() });

function parsePermissions(json: string): Record<TeamPermission, boolean> {
  const out = none();
  try {
    const v = JSON.parse(json) as Record<string, unknown>;
    for (const p of TEAM_PERMISSIONS) out[p] = v[p] === true;
  } catch {
    // A corrupt row grants nothing.
  }
  return out;
}

export async function orgAccess(db: Queryable, principal: Principal | null, organizationId: string): Promise<OrgAccess> {
  if (!principal) return NO_ACCESS;
  if (isSiteAdmin(principal)) return { member: true, owner: true, organizationToken: false, permissions: all() };
  if (principal.kind === 'organization') {
    if (principal.organizationId !== organizationId) return NO_ACCESS;
    return { member: true, owner: false, organizationToken: true, permissions: all() };
  }
  let teams: { is_owners: number; permissions: string }[];
  if (principal.kind === 'team') {
    if (principal.organizationId !== organizationId) return NO_ACCESS;
    teams = await teamGrants(db, principal.teamId);
  } else {
    const membership = await membershipOf(db, organizationId, principal.user.id);
    if (!membership || membership.status !== 'active') return NO_ACCESS;
    teams = await memberTeamGrants(db, organizationId, principal.user.id);
  }
  const owner = teams.some((t) => t.is_owners === 1);
  const permissions = owner ? all() : none();
  if (!owner) {
    for (const t of teams) {
      const p = parsePermissions(t.permissions);
      for (const k of TEAM_PERMISSIONS) permissions[k] ||= p[k];
    }
  }
  return { member: true, owner, organizationToken: false, permissions };
}

/** Owners (site admins, owners-team members and its tokens) change settings, tokens and the organization itself. */
export function canAdministerOrganization(access: OrgAccess): boolean {
  return access.owner;
}

/** Teams and memberships: owners, and the organization token (as in HCP). */
export function canManageTeams(access: OrgAccess): boolean {
  return access.owner || access.organizationToken;
}

/** The organizations a principal is an active member of (a team or organization token: its own). */
export async function memberOrganizationIds(db: Queryable, principal: Principal): Promise<string[]> {
  if (principal.kind !== 'user') return [principal.organizationId];
  return activeOrganizationIds(db, principal.user.id);
}

/**
 * The organizations whose registry modules the principal may read: 'all' for site admins;
 * otherwise its own organizations plus every organization that is a module producer for one of
 * them (if P produces for C, members of C may read P's modules).
 */
export async function consumableOrganizationIds(db: Queryable, principal: Principal | null): Promise<string[] | 'all'> {
  if (!principal) return [];
  if (isSiteAdmin(principal)) return 'all';
  return principal.kind === 'user' ? consumableByUser(db, principal.user.id) : consumableByOrganization(db, principal.organizationId);
}

/** The teams of one organization the principal belongs to (a team token: its team). */
export async function principalTeamIds(db: Queryable, principal: Principal | null, organizationId: string): Promise<Set<string>> {
  if (!principal || principal.kind === 'organization') return new Set();
  if (principal.kind === 'team') return new Set(principal.organizationId === organizationId ? [principal.teamId] : []);
  return new Set(await userTeamIds(db, organizationId, principal.user.id));
}
