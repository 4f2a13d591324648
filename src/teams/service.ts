import { z } from 'zod';
import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation, type Tx } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { ApiError, notFound, quoteValue, unprocessable } from '../http/errors.js';
import { ApiErrors } from '../http/jsonapi.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { deleteToken, findOwnedToken, findUser, type TokenRow } from '../identity/store.js';
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
import { replaceToken, type TokenOptions } from '../organizations/tokens.js';
import { visibleOrganization } from '../organizations/service.js';
import { getMembership, getOrganizationById, membershipOf } from '../organizations/store.js';
import { MEMBER_TOKEN_MANAGEMENT, UNSUPPORTED_ACCESS, organizationAccessOf, readTeamSettings, writeTeamSettings, type TeamRow } from './serialize.js';
import { addTeamMember, deleteTeamRow, getTeam, insertTeam, listTeams, removeTeamMemberRows, updateTeamRow } from './store.js';

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
  'sso-team-id': z.null({ error: 'Terrace maps single sign-on groups to teams by name (TERRACE_OIDC_GROUP_TEAMS), not by sso-team-id: it can only be null' }).optional(),
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

export const OWNERS_TEAM_NAME = 'owners';

const managersOnly = () => notFound('only the owners of an organization (or its organization token) may manage its teams');

/** Every change to teams and their members begins here: owners and the organization token may. */
export function requireTeamManager(access: OrgAccess): void {
  authorize(canManageTeams(access), managersOnly);
}

/** The organization named in a path, if the caller may create teams in it; 404 otherwise. */
export async function organizationForTeams(deps: Deps, p: Principal, name: string): Promise<{ org: OrganizationRow; access: OrgAccess }> {
  const target = await visibleOrganization(deps, p, name);
  requireTeamManager(target.access);
  return target;
}

/** A team the caller may change; 404 otherwise. Call before reading a body. */
export async function teamForManagement(deps: Deps, p: Principal, teamId: string): Promise<VisibleTeam> {
  const vt = await visibleTeam(deps, p, teamId);
  requireTeamManager(vt.access);
  return vt;
}

/** A team the caller may see: secret teams only to owners, the organization token and their members. */
export async function visibleTeam(deps: Deps, p: Principal, teamId: string): Promise<VisibleTeam> {
  const team = await getTeam(deps.db, teamId);
  const org = team ? await getOrganizationById(deps.db, team.organization_id) : undefined;
  const missing = () => notFound(`team ${quoteValue(teamId)} not found, or you are not authorized to see it`);
  if (!team || !org) throw missing();
  const access = await orgAccess(deps.db, p, org.id);
  if (!access.member) throw missing();
  if (team.visibility === 'secret' && !canManageTeams(access) && !(await principalTeamIds(deps.db, p, org.id)).has(team.id)) throw missing();
  return { team, org, access };
}

/** The teams of an organization the caller may see: secret ones only to managers and their members. */
export async function visibleTeams(
  deps: Deps,
  p: Principal,
  orgName: string,
  filter: { q?: string; names?: string[] },
  page: { limit: number; offset: number },
) {
  const { org, access } = await visibleOrganization(deps, p, orgName);
  const visibleSecretIds = canManageTeams(access) ? undefined : await principalTeamIds(deps.db, p, org.id);
  const { rows, total } = await listTeams(deps.db, { ...filter, organizationId: org.id, visibleSecretIds }, page);
  return { org, access, rows, total };
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

const nameTaken = (name: string) => unprocessable(`name: a team named ${quoteValue(name)} already exists in this organization`, '/data/attributes/name');

export async function createTeam(
  deps: Deps,
  p: Principal,
  { org, access }: { org: OrganizationRow; access: OrgAccess },
  a: TeamInput & { name: string },
): Promise<TeamRow> {
  requireTeamManager(access);
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
    await insertTeam(deps.db, team);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(a.name);
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), organization: org.id, team: team.id, name: team.name }, 'team created');
  return team;
}

export async function updateTeam(deps: Deps, p: Principal, { team, access }: VisibleTeam, a: TeamInput): Promise<TeamRow> {
  requireTeamManager(access);
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
    await updateTeamRow(deps.db, updated);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(updated.name);
    throw err;
  }
  const changed = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, changed }, 'team updated');
  return updated;
}

export async function deleteTeam(deps: Deps, p: Principal, { team, access }: VisibleTeam): Promise<void> {
  requireTeamManager(access);
  if (team.is_owners === 1) throw unprocessable('the owners team cannot be deleted');
  await deleteTeamRow(deps.db, team.id);
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
      const m = await getMembership(deps.db, id);
      if (!m || m.organization_id !== team.organization_id) throw notFound(`data[${i}]: organization membership ${quoteValue(id)} not found in this team's organization`);
      out.push(m.user_id);
      continue;
    }
    const user = await findUser(deps.db, id);
    if (!user) throw notFound(`data[${i}]: user ${quoteValue(id)} not found`);
    if (adding) {
      const m = await membershipOf(deps.db, team.organization_id, user.id);
      if (!m) {
        throw unprocessable(`data[${i}].id: user ${quoteValue(id)} is not a member of this organization; invite them first (POST /api/v2/organizations/:organization_name/organization-memberships)`, `/data/${i}/id`);
      }
      if (m.status !== 'active') {
        throw unprocessable(
          `data[${i}].id: user ${quoteValue(id)} must accept their invitation to this organization before being added by user; add them by organization membership (${quoteValue(m.id)}) instead`,
          `/data/${i}/id`,
        );
      }
    }
    out.push(user.id);
  }
  return [...new Set(out)];
}

export async function addTeamMembers(deps: Deps, p: Principal, { team, access }: VisibleTeam, kind: 'users' | 'organization-memberships', ids: string[]): Promise<void> {
  requireTeamManager(access);
  const userIds = await resolveMembers(deps, team, kind, ids, true);
  const now = rfc3339(deps.clock.now());
  await inTransaction(deps.db, async (tx) => {
    for (const userId of userIds) await addTeamMember(tx, team.id, userId, now);
  });
  deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, added: userIds }, 'team members added');
}

export async function removeTeamMembers(deps: Deps, p: Principal, { team, access }: VisibleTeam, kind: 'users' | 'organization-memberships', ids: string[]): Promise<void> {
  requireTeamManager(access);
  const userIds = await resolveMembers(deps, team, kind, ids, false);
  await inTransaction(deps.db, async (tx) => {
    await removeTeamMemberRows(tx, team.id, userIds);
    if (team.is_owners === 1) await assertOwnersTeamKeepsAnActiveMember(tx, team.organization_id, '/data');
  });
  deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, removed: userIds }, 'team members removed');
}

// ---- the owners team, created with its organization ----

/** Registered as an organization-created hook: the owners team, with the creator in it. */
export async function createOwnersTeam(tx: Tx, deps: Deps, org: OrganizationRow, creatorUserId: string): Promise<void> {
  const team: TeamRow = {
    id: newId('team'),
    organization_id: org.id,
    name: OWNERS_TEAM_NAME,
    name_lower: OWNERS_TEAM_NAME,
    is_owners: 1,
    visibility: 'organization',
    permissions: '{}',
    created_at: org.created_at,
  };
  await insertTeam(tx, team);
  await addTeamMember(tx, team.id, creatorUserId, org.created_at);
}

// ---- the team token (legacy endpoint: one per team) ----

const tokenManagersOnly = () => notFound('only the owners of an organization may manage its team tokens');

/** Owners may; so may the team's own members when the team allows member token management. */
async function mayManageTeamToken(deps: Deps, p: Principal, { team, org, access }: VisibleTeam): Promise<boolean> {
  if (access.owner) return true;
  return p.kind === 'user' && readTeamSettings(team).allowMemberTokenManagement && (await principalTeamIds(deps.db, p, org.id)).has(team.id);
}

/** A team whose token the caller may manage; 404 otherwise. Call before reading a body. */
export async function teamForTokens(deps: Deps, p: Principal, teamId: string): Promise<VisibleTeam> {
  const vt = await visibleTeam(deps, p, teamId);
  authorize(await mayManageTeamToken(deps, p, vt), tokenManagersOnly);
  return vt;
}

export async function teamToken(deps: Deps, p: Principal, vt: VisibleTeam): Promise<TokenRow> {
  authorize(await mayManageTeamToken(deps, p, vt), tokenManagersOnly);
  const row = await findOwnedToken(deps.db, { kind: 'team', teamId: vt.team.id });
  if (!row) throw notFound(`team ${quoteValue(vt.team.id)} has no team token`);
  return row;
}

export async function createTeamToken(deps: Deps, p: Principal, vt: VisibleTeam, opts: TokenOptions): Promise<{ row: TokenRow; token: string }> {
  authorize(await mayManageTeamToken(deps, p, vt), tokenManagersOnly);
  const created = await replaceToken(deps, p, { kind: 'team', teamId: vt.team.id }, opts);
  deps.logger.info({ actor: principalLabel(p), organization: vt.team.organization_id, team: vt.team.id, token: created.row.id }, 'team token created');
  return created;
}

export async function deleteTeamToken(deps: Deps, p: Principal, vt: VisibleTeam): Promise<void> {
  const row = await teamToken(deps, p, vt);
  await deleteToken(deps.db, row.id);
  deps.logger.info({ actor: principalLabel(p), organization: vt.team.organization_id, team: vt.team.id, token: row.id }, 'team token deleted');
}
