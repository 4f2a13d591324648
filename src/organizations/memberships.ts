import { rfc3339 } from '../clock.js';
import { afterCommit, inTransaction, type Tx } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import type { ResourceObject } from '../http/jsonapi.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { getUserByEmail } from '../identity/store.js';
import { newId } from '../ids.js';
import { canManageTeams, orgAccess, type OrgAccess, type OrganizationRow } from './access.js';
import { assertOwnersTeamKeepsAnActiveMember } from './owners.js';
import { visibleOrganization } from './service.js';
import {
  activateMembership,
  addToTeams,
  deleteMembershipAndTeamSeats,
  getMembershipView,
  insertMembership,
  isSsoMembership,
  listMemberships,
  markSsoMembership,
  membershipOf,
  userTeamIds,
  teamIdsOf,
  type MembershipFilter,
  type MembershipRow,
  type MembershipView,
} from './store.js';

export type { MembershipFilter, MembershipView };

export function serializeMembership(v: MembershipView): ResourceObject {
  const m = v.membership;
  return {
    id: m.id,
    type: 'organization-memberships',
    attributes: { status: m.status, email: v.user.email, 'created-at': m.created_at },
    relationships: {
      user: { data: { type: 'users', id: v.user.id } },
      organization: { data: { type: 'organizations', id: v.organizationName } },
      teams: { data: v.teamIds.map((id) => ({ type: 'teams', id })) },
    },
    links: { self: `/api/v2/organization-memberships/${m.id}` },
  };
}

const managersOnly = () => notFound('only the owners of an organization (or its organization token) may manage its memberships');

/** Memberships are managed by owners and the organization token (as teams are). */
export function requireMembershipManager(access: OrgAccess): void {
  authorize(canManageTeams(access), managersOnly);
}

/** The organization named in a path, if the caller may list and invite its members; 404 otherwise. */
export async function organizationForMemberships(deps: Deps, p: Principal, name: string): Promise<{ org: OrganizationRow; access: OrgAccess }> {
  const target = await visibleOrganization(deps, p, name);
  requireMembershipManager(target.access);
  return target;
}

export async function organizationMemberships(
  deps: Deps,
  p: Principal,
  target: { org: OrganizationRow; access: OrgAccess },
  filter: Omit<MembershipFilter, 'organizationId' | 'userId'>,
  page: { limit: number; offset: number },
) {
  requireMembershipManager(target.access);
  return listMemberships(deps.db, { ...filter, organizationId: target.org.id }, page);
}

/** The calling user's own memberships, invitations included: how an invited user finds the id to accept. */
export async function ownMemberships(deps: Deps, p: Principal, filter: Omit<MembershipFilter, 'organizationId' | 'userId'>, page: { limit: number; offset: number }) {
  if (p.kind !== 'user') throw notFound('GET /organization-memberships lists the memberships of the calling user; use a user token');
  return listMemberships(deps.db, { ...filter, userId: p.user.id }, page);
}

/** Visible to the member themselves and to whoever manages the organization's members; 404 otherwise. */
export async function visibleMembership(deps: Deps, p: Principal, id: string): Promise<MembershipView> {
  const view = await getMembershipView(deps.db, id);
  if (!view) throw notFound();
  const self = p.kind === 'user' && p.user.id === view.user.id;
  authorize(self || canManageTeams(await orgAccess(deps.db, p, view.membership.organization_id)), () => notFound());
  return view;
}

/** Invites an existing Terrace user (by email) into org, and into the given teams right away. */
export async function inviteUser(
  deps: Deps,
  p: Principal,
  { org, access }: { org: OrganizationRow; access: OrgAccess },
  email: string,
  teamIds: string[],
): Promise<MembershipView> {
  requireMembershipManager(access);
  const user = await getUserByEmail(deps.db, email);
  if (!user) {
    throw unprocessable(
      `email: no Terrace user has the email ${quoteValue(email)}; Terrace sends no invitation emails, so a site admin must create the user first (POST /api/v2/admin/users)`,
      '/data/attributes/email',
    );
  }
  const existing = await membershipOf(deps.db, org.id, user.id);
  if (existing) {
    throw unprocessable(`email: ${quoteValue(email)} already has a membership in this organization (${existing.id}, ${existing.status})`, '/data/attributes/email');
  }
  const teams = await teamIdsOf(deps.db, org.id, teamIds);
  teamIds.forEach((id, i) => {
    if (!teams.includes(id)) {
      throw unprocessable(`relationships.teams.data[${i}].id: ${quoteValue(id)} is not a team of this organization`, `/data/relationships/teams/data/${i}/id`);
    }
  });
  const now = rfc3339(deps.clock.now());
  const membership: MembershipRow = { id: newId('ou'), organization_id: org.id, user_id: user.id, status: 'invited', created_at: now };
  await inTransaction(deps.db, async (tx) => {
    await insertMembership(tx, membership);
    await addToTeams(tx, user.id, [...new Set(teamIds)], now);
  });
  deps.logger.info({ actor: principalLabel(p), organization: org.id, membership: membership.id, user: user.id, teams: teamIds }, 'user invited');
  return (await getMembershipView(deps.db, membership.id))!;
}

/** The invited user accepts; accepting an active membership again changes nothing. */
export async function acceptInvitation(deps: Deps, p: Principal, id: string): Promise<MembershipView> {
  const view = await getMembershipView(deps.db, id);
  if (!view || p.kind !== 'user' || view.user.id !== p.user.id) {
    throw notFound('organization membership not found; only the invited user can accept an invitation, with their own user token');
  }
  if (view.membership.status === 'invited') {
    await activateMembership(deps.db, id);
    deps.logger.info({ actor: principalLabel(p), organization: view.membership.organization_id, membership: id }, 'invitation accepted');
    view.membership = { ...view.membership, status: 'active' };
  }
  return view;
}

/** Removes the user from the organization and all its teams, keeping the owners team staffed. */
export async function removeMembership(deps: Deps, p: Principal, id: string): Promise<void> {
  const m = (await visibleMembership(deps, p, id)).membership;
  await inTransaction(deps.db, async (tx) => {
    await deleteMembershipAndTeamSeats(tx, m);
    await assertOwnersTeamKeepsAnActiveMember(tx, m.organization_id);
  });
  deps.logger.info({ actor: principalLabel(p), organization: m.organization_id, membership: m.id, user: m.user_id }, 'organization membership removed');
}

// ---- single sign-on's group mapping (teams/group-sync.ts) ----
// The authority here is the identity provider's verified claim and the operator's mapping, not
// a principal: these run only inside the sign-in that checked the ID token. They run in its
// transaction, which PostgreSQL may run again: their log lines wait for the commit.

/** The user becomes an active member (an invitation counts as accepted); a new membership is marked as single sign-on's. */
export async function joinBySingleSignOn(tx: Tx, deps: Deps, organizationId: string, userId: string): Promise<void> {
  const now = rfc3339(deps.clock.now());
  const existing = await membershipOf(tx, organizationId, userId);
  if (existing?.status === 'active') return;
  if (existing) {
    await activateMembership(tx, existing.id);
    afterCommit(tx, () => deps.logger.info({ actor: 'single sign-on', organization: organizationId, membership: existing.id, user: userId }, 'invitation accepted through single sign-on'));
    return;
  }
  const membership: MembershipRow = { id: newId('ou'), organization_id: organizationId, user_id: userId, status: 'active', created_at: now };
  await insertMembership(tx, membership);
  await markSsoMembership(tx, membership.id, now);
  afterCommit(tx, () => deps.logger.info({ actor: 'single sign-on', organization: organizationId, membership: membership.id, user: userId }, 'organization membership created through single sign-on'));
}

/** A membership single sign-on created ends once its user sits in no team of the organization. */
export async function leaveBySingleSignOn(tx: Tx, deps: Deps, organizationId: string, userId: string): Promise<void> {
  const m = await membershipOf(tx, organizationId, userId);
  if (!m || !(await isSsoMembership(tx, m.id)) || (await userTeamIds(tx, organizationId, userId)).length > 0) return;
  await deleteMembershipAndTeamSeats(tx, m);
  afterCommit(tx, () => deps.logger.info({ actor: 'single sign-on', organization: organizationId, membership: m.id, user: userId }, 'organization membership removed through single sign-on'));
}
