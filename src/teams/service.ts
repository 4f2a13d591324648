import { z } from 'zod';
import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import { ApiError, notFound, unprocessable } from '../http/errors.js';
import { ApiErrors } from '../http/jsonapi.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { findUser } from '../identity/users.js';
import { newId } from '../ids.js';
import {
  TEAM_PERMISSIONS,
  canManageTeams,
  orgAccess,
  principalTeamIds,
  type OrgAccess,
  type OrganizationRow,
} from '../organizations/access.js';
import { assertOwnersTeamKeepsAnActiveMember } from '../organizations/owners.js';
import { getOrganizationById } from '../organizations/store.js';
import { MEMBER_TOKEN_MANAGEMENT, UNSUPPORTED_ACCESS, organizationAccessOf, readTeamSettings, writeTeamSettings, type TeamRow } from './serialize.js';
import { getTeam } from './store.js';

export const TEAM_NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9])?$/;
const bool = () => z.boolean({ error: 'must be true or false' }).optional();

const accessSchema = z.object(
  Object.fromEntries([...TEAM_PERMISSIONS, ...UNSUPPORTED_ACCESS].map((k) => [k, bool()])) as Record<
    (typeof TEAM_PERMISSIONS)[number] | (typeof UNSUPPORTED_ACCESS)[number],
    ReturnType<typeof bool>
  >,
  { error: 'must be an object of permission names to true or false' },
);

const teamAttributes = {
  visibility: z.enum(['secret', 'organization'], { error: 'must be "secret" or "organization"' }).optional(),
  'organization-access': accessSchema.optional(),
  'sso-team-id': z.null({ error: 'Terrace has no SSO: sso-team-id can only be null' }).optional(),
  [MEMBER_TOKEN_MANAGEMENT]: bool(),
};
const nameRule = { error: 'must be 1-64 letters, digits, "-", "_" or ".", starting and ending with a letter or digit' };
export const createTeamSchema = z.object({
  name: z.string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') }).regex(TEAM_NAME_RE, nameRule),
  ...teamAttributes,
});
export const updateTeamSchema = z.object({ name: z.string({ error: 'must be a string' }).regex(TEAM_NAME_RE, nameRule).optional(), ...teamAttributes });
type TeamInput = z.output<typeof updateTeamSchema>;

export interface VisibleTeam {
  team: TeamRow;
  org: OrganizationRow;
  access: OrgAccess;
}

/** A team the caller may see: secret teams only to owners, the organization token and their members. */
export async function visibleTeam(deps: Deps, p: Principal, teamId: string): Promise<VisibleTeam> {
  const team = await getTeam(deps.db, teamId);
  const org = team ? await getOrganizationById(deps.db, team.organization_id) : undefined;
  const missing = () => notFound(`team "${teamId}" not found, or you are not authorized to see it`);
  if (!team || !org) throw missing();
  const access = await orgAccess(deps.db, p, org.id);
  if (!access.member) throw missing();
  if (team.visibility === 'secret' && !canManageTeams(access) && !(await principalTeamIds(deps.db, p, org.id)).has(team.id)) throw missing();
  return { team, org, access };
}

/** Applies organization-access changes, refusing grants Terrace does not model and any change to the owners team. */
function nextSettings(team: TeamRow | null, a: TeamInput): string {
  const current = team ? readTeamSettings(team) : { permissions: Object.fromEntries(TEAM_PERMISSIONS.map((k) => [k, false])), allowMemberTokenManagement: false };
  const settings = { permissions: { ...current.permissions }, allowMemberTokenManagement: a[MEMBER_TOKEN_MANAGEMENT] ?? current.allowMemberTokenManagement } as ReturnType<typeof readTeamSettings>;
  const errors: ApiError[] = [];
  const given = a['organization-access'] ?? {};
  const shown = team ? organizationAccessOf(team) : {};
  for (const [k, v] of Object.entries(given)) {
    if (v === undefined) continue;
    const ptr = `/data/attributes/organization-access/${k}`;
    if (team?.is_owners === 1) {
      if (shown[k] !== v) errors.push(unprocessable(`organization-access.${k}: the owners team's organization access cannot be changed`, ptr));
    } else if ((UNSUPPORTED_ACCESS as readonly string[]).includes(k)) {
      if (v) errors.push(unprocessable(`organization-access.${k}: Terrace does not grant this to teams; it can grant ${TEAM_PERMISSIONS.join(', ')}`, ptr));
    } else {
      settings.permissions[k as (typeof TEAM_PERMISSIONS)[number]] = v;
    }
  }
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ApiErrors(errors);
  return writeTeamSettings(settings);
}

const nameTaken = (name: string) => unprocessable(`name: a team named "${name}" already exists in this organization`, '/data/attributes/name');

export async function createTeam(deps: Deps, p: Principal, org: OrganizationRow, a: TeamInput & { name: string }): Promise<TeamRow> {
  const team: TeamRow = {
    id: newId('team'),
    organization_id: org.id,
    name: a.name,
    name_lower: a.name.toLowerCase(),
    is_owners: 0,
    visibility: a.visibility ?? 'secret',
    permissions: nextSettings(null, a),
    created_at: rfc3339(deps.clock.now()),
  };
  try {
    await deps.db.insertInto('teams').values(team).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(a.name);
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), organization: org.id, team: team.id, name: team.name }, 'team created');
  return team;
}

export async function updateTeam(deps: Deps, p: Principal, team: TeamRow, a: TeamInput): Promise<TeamRow> {
  if (team.is_owners === 1 && a.name !== undefined && a.name !== team.name) {
    throw unprocessable('name: the owners team cannot be renamed', '/data/attributes/name');
  }
  const updated: TeamRow = {
    ...team,
    name: a.name ?? team.name,
    name_lower: (a.name ?? team.name).toLowerCase(),
    visibility: a.visibility ?? team.visibility,
    permissions: nextSettings(team, a),
  };
  try {
    await deps.db
      .updateTable('teams')
      .set({ name: updated.name, name_lower: updated.name_lower, visibility: updated.visibility, permissions: updated.permissions })
      .where('id', '=', team.id)
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(updated.name);
    throw err;
  }
  const changed = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, changed }, 'team updated');
  return updated;
}

export async function deleteTeam(deps: Deps, p: Principal, team: TeamRow): Promise<void> {
  if (team.is_owners === 1) throw unprocessable('the owners team cannot be deleted');
  await deps.db.deleteFrom('teams').where('id', '=', team.id).execute();
  deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, name: team.name }, 'team deleted');
}

/**
 * Resolves the user ids named in a team-membership body. users: a username (go-tfe) or user id;
 * organization-memberships: an ou- id of this team's organization. Everything is checked before
 * anything changes.
 */
async function resolveMembers(deps: Deps, team: TeamRow, kind: 'users' | 'organization-memberships', ids: string[], adding: boolean): Promise<string[]> {
  const out: string[] = [];
  for (const [i, id] of ids.entries()) {
    if (kind === 'organization-memberships') {
      const m = await deps.db.selectFrom('organization_memberships').selectAll().where('id', '=', id).executeTakeFirst();
      if (!m || m.organization_id !== team.organization_id) throw notFound(`data[${i}]: organization membership "${id}" not found in this team's organization`);
      out.push(m.user_id);
      continue;
    }
    const user = await findUser(deps.db, id);
    if (!user) throw notFound(`data[${i}]: user "${id}" not found`);
    if (adding) {
      const m = await deps.db
        .selectFrom('organization_memberships')
        .select(['id', 'status'])
        .where('organization_id', '=', team.organization_id)
        .where('user_id', '=', user.id)
        .executeTakeFirst();
      if (!m) {
        throw unprocessable(`data[${i}].id: user "${id}" is not a member of this organization; invite them first (POST /api/v2/organizations/:organization_name/organization-memberships)`, `/data/${i}/id`);
      }
      if (m.status !== 'active') {
        throw unprocessable(
          `data[${i}].id: user "${id}" must accept their invitation to this organization before being added by user; add them by organization membership ("${m.id}") instead`,
          `/data/${i}/id`,
        );
      }
    }
    out.push(user.id);
  }
  return [...new Set(out)];
}

export async function addTeamMembers(deps: Deps, p: Principal, team: TeamRow, kind: 'users' | 'organization-memberships', ids: string[]): Promise<void> {
  const userIds = await resolveMembers(deps, team, kind, ids, true);
  const now = rfc3339(deps.clock.now());
  await inTransaction(deps.db, async (tx) => {
    for (const userId of userIds) {
      await tx
        .insertInto('team_members')
        .values({ team_id: team.id, user_id: userId, created_at: now })
        .onConflict((oc) => oc.columns(['team_id', 'user_id']).doNothing())
        .execute();
    }
  });
  deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, added: userIds }, 'team members added');
}

export async function removeTeamMembers(deps: Deps, p: Principal, team: TeamRow, kind: 'users' | 'organization-memberships', ids: string[]): Promise<void> {
  const userIds = await resolveMembers(deps, team, kind, ids, false);
  await inTransaction(deps.db, async (tx) => {
    await tx.deleteFrom('team_members').where('team_id', '=', team.id).where('user_id', 'in', userIds).execute();
    if (team.is_owners === 1) await assertOwnersTeamKeepsAnActiveMember(tx, team.organization_id, '/data');
  });
  deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, removed: userIds }, 'team members removed');
}
