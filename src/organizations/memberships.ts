import { rfc3339 } from '../clock.js';
import { inTransaction, type Queryable } from '../db/index.js';
import type { OrganizationMembershipsTable } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { notFound, unprocessable } from '../http/errors.js';
import type { ResourceObject } from '../http/jsonapi.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import type { UserRow } from '../identity/users.js';
import { newId } from '../ids.js';
import type { OrganizationRow } from './access.js';
import { assertOwnersTeamKeepsAnActiveMember } from './owners.js';
import { containsInsensitive } from './store.js';

export type MembershipRow = OrganizationMembershipsTable;

/** A membership with what its document shows: the user, the organization's name, its teams. */
export interface MembershipView {
  membership: MembershipRow;
  user: UserRow;
  organizationName: string;
  teamIds: string[];
}

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

export interface MembershipFilter {
  organizationId?: string;
  userId?: string;
  status?: 'invited' | 'active';
  emails?: string[];
  q?: string;
}

function filtered(db: Queryable, f: MembershipFilter) {
  let q = db
    .selectFrom('organization_memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id');
  if (f.organizationId) q = q.where('m.organization_id', '=', f.organizationId);
  if (f.userId) q = q.where('m.user_id', '=', f.userId);
  if (f.status) q = q.where('m.status', '=', f.status);
  if (f.emails) q = q.where('u.email_lower', 'in', f.emails.map((e) => e.toLowerCase()));
  if (f.q !== undefined) {
    const term = f.q;
    q = q.where((eb) => eb.or([containsInsensitive('u.username', term), containsInsensitive('u.email', term)]));
  }
  return q;
}

async function views(db: Queryable, rows: { m: MembershipRow; u: UserRow; orgName: string }[]): Promise<MembershipView[]> {
  const userIds = [...new Set(rows.map((r) => r.u.id))];
  const teamRows = userIds.length
    ? await db
        .selectFrom('team_members')
        .innerJoin('teams', 'teams.id', 'team_members.team_id')
        .select(['team_members.user_id', 'teams.id', 'teams.organization_id'])
        .where('team_members.user_id', 'in', userIds)
        .orderBy('teams.name_lower')
        .execute()
    : [];
  return rows.map((r) => ({
    membership: r.m,
    user: r.u,
    organizationName: r.orgName,
    teamIds: teamRows.filter((t) => t.user_id === r.u.id && t.organization_id === r.m.organization_id).map((t) => t.id),
  }));
}

export async function listMemberships(db: Queryable, f: MembershipFilter, page: { limit: number; offset: number }) {
  const base = filtered(db, f);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base
    .selectAll('m')
    .select(['u.username', 'u.username_lower', 'u.email', 'u.email_lower', 'u.is_site_admin', 'u.is_service_account', 'u.created_at as user_created_at', 'o.name as org_name'])
    .orderBy('o.name_lower')
    .orderBy('u.username_lower')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const list = rows.map((r) => ({
    m: { id: r.id, organization_id: r.organization_id, user_id: r.user_id, status: r.status, created_at: r.created_at },
    u: {
      id: r.user_id,
      username: r.username,
      username_lower: r.username_lower,
      email: r.email,
      email_lower: r.email_lower,
      is_site_admin: r.is_site_admin,
      is_service_account: r.is_service_account,
      created_at: r.user_created_at,
    },
    orgName: r.org_name,
  }));
  return { views: await views(db, list), total: Number(n) };
}

export async function getMembershipView(db: Queryable, id: string): Promise<MembershipView | undefined> {
  const m = await db.selectFrom('organization_memberships').selectAll().where('id', '=', id).executeTakeFirst();
  if (!m) return undefined;
  const u = await db.selectFrom('users').selectAll().where('id', '=', m.user_id).executeTakeFirstOrThrow();
  const o = await db.selectFrom('organizations').select('name').where('id', '=', m.organization_id).executeTakeFirstOrThrow();
  return (await views(db, [{ m, u, orgName: o.name }]))[0];
}

/** Invites an existing Terrace user (by email) into org, and into the given teams right away. */
export async function inviteUser(
  deps: Deps,
  p: Principal,
  org: OrganizationRow,
  email: string,
  teamIds: string[],
): Promise<MembershipView> {
  const user = await deps.db.selectFrom('users').selectAll().where('email_lower', '=', email.toLowerCase()).executeTakeFirst();
  if (!user) {
    throw unprocessable(
      `email: no Terrace user has the email "${email}"; Terrace sends no invitation emails, so a site admin must create the user first (POST /api/v2/admin/users)`,
      '/data/attributes/email',
    );
  }
  const existing = await deps.db
    .selectFrom('organization_memberships')
    .select(['id', 'status'])
    .where('organization_id', '=', org.id)
    .where('user_id', '=', user.id)
    .executeTakeFirst();
  if (existing) {
    throw unprocessable(`email: "${email}" already has a membership in this organization (${existing.id}, ${existing.status})`, '/data/attributes/email');
  }
  const teams = teamIds.length
    ? await deps.db.selectFrom('teams').select('id').where('organization_id', '=', org.id).where('id', 'in', teamIds).execute()
    : [];
  teamIds.forEach((id, i) => {
    if (!teams.some((t) => t.id === id)) {
      throw unprocessable(`relationships.teams.data[${i}].id: "${id}" is not a team of this organization`, `/data/relationships/teams/data/${i}/id`);
    }
  });
  const now = rfc3339(deps.clock.now());
  const membership: MembershipRow = { id: newId('ou'), organization_id: org.id, user_id: user.id, status: 'invited', created_at: now };
  await inTransaction(deps.db, async (tx) => {
    await tx.insertInto('organization_memberships').values(membership).execute();
    for (const teamId of new Set(teamIds)) {
      await tx.insertInto('team_members').values({ team_id: teamId, user_id: user.id, created_at: now }).execute();
    }
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
    await deps.db.updateTable('organization_memberships').set({ status: 'active' }).where('id', '=', id).execute();
    deps.logger.info({ actor: principalLabel(p), organization: view.membership.organization_id, membership: id }, 'invitation accepted');
    view.membership = { ...view.membership, status: 'active' };
  }
  return view;
}

/** Removes the user from the organization and all its teams, keeping the owners team staffed. */
export async function removeMembership(deps: Deps, p: Principal, view: MembershipView): Promise<void> {
  const m = view.membership;
  await inTransaction(deps.db, async (tx) => {
    const teamIds = tx.selectFrom('teams').select('id').where('organization_id', '=', m.organization_id);
    await tx.deleteFrom('team_members').where('user_id', '=', m.user_id).where('team_id', 'in', teamIds).execute();
    await tx.deleteFrom('organization_memberships').where('id', '=', m.id).execute();
    await assertOwnersTeamKeepsAnActiveMember(tx, m.organization_id);
  });
  deps.logger.info({ actor: principalLabel(p), organization: m.organization_id, membership: m.id, user: m.user_id }, 'organization membership removed');
}
