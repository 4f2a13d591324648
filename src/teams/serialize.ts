import type { Selectable } from 'kysely';
import type { TeamsTable } from '../db/schema.js';
import type { ResourceObject } from '../http/jsonapi.js';
import { TEAM_PERMISSIONS, canManageTeams, type OrgAccess, type TeamPermission } from '../organizations/access.js';

export type TeamRow = Selectable<TeamsTable>;

/**
 * organization-access keys go-tfe knows that Terrace does not grant to teams: shown (false, or
 * true on the owners team) so clients decode them, refused when set to true.
 */
export const UNSUPPORTED_ACCESS = [
  'manage-policies',
  'manage-policy-overrides',
  'manage-providers',
  'read-workspaces',
  'read-projects',
  'manage-membership',
  'manage-teams',
  'manage-organization-access',
  'access-secret-teams',
  'manage-agent-pools',
] as const;

export const MEMBER_TOKEN_MANAGEMENT = 'allow-member-token-management';

export interface StoredTeamSettings {
  permissions: Record<TeamPermission, boolean>;
  allowMemberTokenManagement: boolean;
}

/** teams.permissions holds the granted organization-access keys and the member-token flag. */
export function readTeamSettings(team: TeamRow): StoredTeamSettings {
  let v: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(team.permissions) as unknown;
    if (typeof parsed === 'object' && parsed !== null) v = parsed as Record<string, unknown>;
  } catch {
    // A corrupt row grants nothing.
  }
  const permissions = Object.fromEntries(TEAM_PERMISSIONS.map((p) => [p, team.is_owners === 1 || v[p] === true])) as Record<TeamPermission, boolean>;
  return { permissions, allowMemberTokenManagement: v[MEMBER_TOKEN_MANAGEMENT] === true };
}

export function writeTeamSettings(s: StoredTeamSettings): string {
  return JSON.stringify({ ...s.permissions, [MEMBER_TOKEN_MANAGEMENT]: s.allowMemberTokenManagement });
}

export function organizationAccessOf(team: TeamRow): Record<string, boolean> {
  const owners = team.is_owners === 1;
  const { permissions } = readTeamSettings(team);
  return { ...permissions, ...Object.fromEntries(UNSUPPORTED_ACCESS.map((k) => [k, owners])) };
}

export interface TeamMember {
  userId: string;
  membershipId: string;
}

export function serializeTeam(team: TeamRow, orgName: string, members: TeamMember[], access: OrgAccess): ResourceObject {
  const manage = canManageTeams(access);
  const owners = team.is_owners === 1;
  const settings = readTeamSettings(team);
  return {
    id: team.id,
    type: 'teams',
    attributes: {
      name: team.name,
      'users-count': members.length,
      visibility: team.visibility,
      'organization-access': organizationAccessOf(team),
      'sso-team-id': null,
      [MEMBER_TOKEN_MANAGEMENT]: settings.allowMemberTokenManagement,
      'is-unified': false,
      'created-at': team.created_at,
      permissions: {
        'can-update-membership': manage,
        'can-destroy': manage && !owners,
        'can-update-organization-access': manage && !owners,
        'can-update-name': manage && !owners,
        'can-update-visibility': manage,
        'can-update-api-token': access.owner,
        'can-view-api-token': access.owner,
        'can-update-sso-team-id': false,
        'can-update-member-token-management': manage,
      },
    },
    relationships: {
      organization: { data: { type: 'organizations', id: orgName }, links: { related: `/api/v2/organizations/${encodeURIComponent(orgName)}` } },
      users: { data: members.map((m) => ({ type: 'users', id: m.userId })) },
      'organization-memberships': { data: members.map((m) => ({ type: 'organization-memberships', id: m.membershipId })) },
      'authentication-token': { links: { related: `/api/v2/teams/${team.id}/authentication-token` } },
    },
    links: { self: `/api/v2/teams/${team.id}` },
  };
}
