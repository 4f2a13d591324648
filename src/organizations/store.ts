import { sql, type Expression, type SqlBool } from 'kysely';
import { inTransaction, type Db, type Queryable } from '../db/index.js';
import type { AgentPoolsTable, DataRetentionPoliciesTable, OrganizationMembershipsTable } from '../db/schema.js';
import type { UserRow } from '../identity/store.js';
import type { OrganizationRow } from './access.js';

export type AgentPoolRow = AgentPoolsTable;
export type DataRetentionPolicyRow = DataRetentionPoliciesTable;

/** `lower(column) LIKE %term%` with the term's wildcards escaped (portable to PostgreSQL). */
export function containsInsensitive(column: string, term: string): Expression<SqlBool> {
  const pattern = `%${term.toLowerCase().replace(/[!%_]/g, (ch) => `!${ch}`)}%`;
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '!'`;
}

export interface OrganizationFilter {
  /** Organization ids the caller may see, or 'all'. */
  ids: string[] | 'all';
  q?: string;
  name?: string;
  email?: string;
}

function filtered(db: Queryable, f: OrganizationFilter) {
  let query = db.selectFrom('organizations');
  if (f.ids !== 'all') query = f.ids.length ? query.where('id', 'in', f.ids) : query.where(sql<SqlBool>`1 = 0`);
  if (f.q !== undefined) {
    const q = f.q;
    query = query.where((eb) => eb.or([containsInsensitive('name', q), containsInsensitive('email', q)]));
  } else {
    if (f.name !== undefined) query = query.where(containsInsensitive('name', f.name));
    if (f.email !== undefined) query = query.where(containsInsensitive('email', f.email));
  }
  return query;
}

export async function countOrganizations(db: Queryable, f: OrganizationFilter): Promise<number> {
  const r = await filtered(db, f).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function listOrganizations(
  db: Queryable,
  f: OrganizationFilter,
  page?: { limit: number; offset: number },
): Promise<OrganizationRow[]> {
  let query = filtered(db, f).selectAll().orderBy('name_lower');
  if (page) query = query.limit(page.limit).offset(page.offset);
  return (await query.execute()) as OrganizationRow[];
}

export async function getOrganizationByName(db: Queryable, name: string): Promise<OrganizationRow | undefined> {
  return (await db.selectFrom('organizations').selectAll().where('name_lower', '=', name.toLowerCase()).executeTakeFirst()) as OrganizationRow | undefined;
}

export async function getOrganizationById(db: Queryable, id: string): Promise<OrganizationRow | undefined> {
  return (await db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst()) as OrganizationRow | undefined;
}

export async function insertOrganization(db: Queryable, org: OrganizationRow): Promise<void> {
  await db.insertInto('organizations').values(org).execute();
}

export async function updateOrganizationRow(db: Queryable, org: OrganizationRow): Promise<void> {
  await db
    .updateTable('organizations')
    .set({ name: org.name, name_lower: org.name_lower, email: org.email, attributes: org.attributes })
    .where('id', '=', org.id)
    .execute();
}

/** Every table that belongs to an organization cascades from its row. */
export async function deleteOrganizationRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('organizations').where('id', '=', id).execute();
}

export async function insertMembership(db: Queryable, m: OrganizationMembershipsTable): Promise<void> {
  await db.insertInto('organization_memberships').values(m).execute();
}

export async function getMembership(db: Queryable, id: string): Promise<OrganizationMembershipsTable | undefined> {
  return db.selectFrom('organization_memberships').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The membership of one user in one organization, if any. */
export async function membershipOf(db: Queryable, organizationId: string, userId: string): Promise<OrganizationMembershipsTable | undefined> {
  return db
    .selectFrom('organization_memberships')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

// ---- agent pools ----

export async function getAgentPool(db: Queryable, id: string): Promise<AgentPoolRow | undefined> {
  return db.selectFrom('agent_pools').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listAgentPools(db: Queryable, organizationId: string, q: string | undefined, page: { limit: number; offset: number }) {
  let base = db.selectFrom('agent_pools').where('organization_id', '=', organizationId);
  if (q !== undefined) base = base.where(containsInsensitive('name', q));
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('name_lower').orderBy('id').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

export async function insertAgentPool(db: Queryable, pool: AgentPoolRow): Promise<void> {
  await db.insertInto('agent_pools').values(pool).execute();
}

// ---- module producers ----

/** Organizations that share their modules with organizationId. */
export async function listProducers(db: Queryable, organizationId: string, page: { limit: number; offset: number }) {
  const base = db
    .selectFrom('organization_module_producers as p')
    .innerJoin('organizations as o', 'o.id', 'p.producer_id')
    .where('p.organization_id', '=', organizationId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll('o').orderBy('o.name_lower').limit(page.limit).offset(page.offset).execute();
  return { rows: rows as OrganizationRow[], total: Number(n) };
}

/** Organizations that may use producerId's modules. */
export async function listConsumers(db: Queryable, producerId: string, page: { limit: number; offset: number }) {
  const base = db
    .selectFrom('organization_module_producers as p')
    .innerJoin('organizations as o', 'o.id', 'p.organization_id')
    .where('p.producer_id', '=', producerId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll('o').orderBy('o.name_lower').limit(page.limit).offset(page.offset).execute();
  return { rows: rows as OrganizationRow[], total: Number(n) };
}

/** Replaces every consumer of producerId's modules in one transaction. */
export async function replaceModuleConsumers(db: Db, producerId: string, consumerIds: string[], now: string): Promise<void> {
  await inTransaction(db, async (tx) => {
    await tx.deleteFrom('organization_module_producers').where('producer_id', '=', producerId).execute();
    for (const id of consumerIds) {
      await tx.insertInto('organization_module_producers').values({ organization_id: id, producer_id: producerId, created_at: now }).execute();
    }
  });
}

// ---- data retention ----

export async function getDataRetentionPolicy(db: Queryable, organizationId: string): Promise<DataRetentionPolicyRow | undefined> {
  return db.selectFrom('data_retention_policies').selectAll().where('organization_id', '=', organizationId).executeTakeFirst();
}

/** The organization whose id follows after (in id order), for sweeps that walk them all resumably. */
export async function nextOrganizationId(db: Queryable, after: string | null): Promise<string | undefined> {
  let q = db.selectFrom('organizations').select('id').orderBy('id').limit(1);
  if (after !== null) q = q.where('id', '>', after);
  return (await q.executeTakeFirst())?.id;
}

/** An organization has at most one policy of its own: the new one replaces it in one transaction. */
export async function replaceDataRetentionPolicy(db: Db, row: DataRetentionPolicyRow): Promise<void> {
  await inTransaction(db, async (tx) => {
    await tx.deleteFrom('data_retention_policies').where('organization_id', '=', row.organization_id).execute();
    await tx.insertInto('data_retention_policies').values(row).execute();
  });
}

export async function deleteDataRetentionPolicy(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('data_retention_policies').where('id', '=', id).execute();
}

// ---- memberships ----

export type MembershipRow = OrganizationMembershipsTable;

/** A membership with what its document shows: the user, the organization's name, its teams. */
export interface MembershipView {
  membership: MembershipRow;
  user: UserRow;
  organizationName: string;
  teamIds: string[];
}

export interface MembershipFilter {
  organizationId?: string;
  userId?: string;
  status?: 'invited' | 'active';
  emails?: string[];
  q?: string;
}

function filteredMemberships(db: Queryable, f: MembershipFilter) {
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

async function membershipViews(db: Queryable, rows: { m: MembershipRow; u: UserRow; orgName: string }[]): Promise<MembershipView[]> {
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
  const base = filteredMemberships(db, f);
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
  return { views: await membershipViews(db, list), total: Number(n) };
}

export async function getMembershipView(db: Queryable, id: string): Promise<MembershipView | undefined> {
  const m = await db.selectFrom('organization_memberships').selectAll().where('id', '=', id).executeTakeFirst();
  if (!m) return undefined;
  const u = await db.selectFrom('users').selectAll().where('id', '=', m.user_id).executeTakeFirstOrThrow();
  const o = await db.selectFrom('organizations').select('name').where('id', '=', m.organization_id).executeTakeFirstOrThrow();
  return (await membershipViews(db, [{ m, u, orgName: o.name }]))[0];
}

export async function activateMembership(db: Queryable, id: string): Promise<void> {
  await db.updateTable('organization_memberships').set({ status: 'active' }).where('id', '=', id).execute();
}

/** Records that single sign-on's group mapping created the membership. */
export async function markSsoMembership(db: Queryable, membershipId: string, now: string): Promise<void> {
  await db.insertInto('sso_memberships').values({ membership_id: membershipId, created_at: now }).onConflict((oc) => oc.column('membership_id').doNothing()).execute();
}

export async function isSsoMembership(db: Queryable, membershipId: string): Promise<boolean> {
  return (await db.selectFrom('sso_memberships').select('membership_id').where('membership_id', '=', membershipId).executeTakeFirst()) !== undefined;
}

/** Which of teamIds are teams of the organization. */
export async function teamIdsOf(db: Queryable, organizationId: string, teamIds: string[]): Promise<string[]> {
  if (teamIds.length === 0) return [];
  const rows = await db.selectFrom('teams').select('id').where('organization_id', '=', organizationId).where('id', 'in', teamIds).execute();
  return rows.map((r) => r.id);
}

/** Seats an invited user in teams of the organization they are invited to. */
export async function addToTeams(db: Queryable, userId: string, teamIds: string[], now: string): Promise<void> {
  for (const teamId of teamIds) await db.insertInto('team_members').values({ team_id: teamId, user_id: userId, created_at: now }).execute();
}

/** The membership and the user's seats in the organization's teams. */
export async function deleteMembershipAndTeamSeats(db: Queryable, m: MembershipRow): Promise<void> {
  const teamIds = db.selectFrom('teams').select('id').where('organization_id', '=', m.organization_id);
  await db.deleteFrom('team_members').where('user_id', '=', m.user_id).where('team_id', 'in', teamIds).execute();
  await db.deleteFrom('organization_memberships').where('id', '=', m.id).execute();
}

// ---- what access is computed from ----

type Grant = { is_owners: number; permissions: string };

/** What one team grants (a team token's access). */
export async function teamGrants(db: Queryable, teamId: string): Promise<Grant[]> {
  return db.selectFrom('teams').select(['is_owners', 'permissions']).where('id', '=', teamId).execute();
}

/** What the teams a user sits in grant in one organization. */
export async function memberTeamGrants(db: Queryable, organizationId: string, userId: string): Promise<Grant[]> {
  return db
    .selectFrom('team_members')
    .innerJoin('teams', 'teams.id', 'team_members.team_id')
    .select(['teams.is_owners', 'teams.permissions'])
    .where('team_members.user_id', '=', userId)
    .where('teams.organization_id', '=', organizationId)
    .execute();
}

export async function userTeamIds(db: Queryable, organizationId: string, userId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('team_members')
    .innerJoin('teams', 'teams.id', 'team_members.team_id')
    .select('teams.id')
    .where('team_members.user_id', '=', userId)
    .where('teams.organization_id', '=', organizationId)
    .execute();
  return rows.map((r) => r.id);
}

/** The organizations a user is an active member of. */
export async function activeOrganizationIds(db: Queryable, userId: string): Promise<string[]> {
  const rows = await db.selectFrom('organization_memberships').select('organization_id').where('user_id', '=', userId).where('status', '=', 'active').execute();
  return rows.map((r) => r.organization_id);
}

// One statement each: they run on every registry read.

/** A user's organizations and every organization producing modules for one of them. */
export async function consumableByUser(db: Queryable, userId: string): Promise<string[]> {
  const rows = await sql<{ id: string }>`
    select m.organization_id as id from organization_memberships m where m.user_id = ${userId} and m.status = 'active'
    union
    select p.producer_id as id from organization_module_producers p
      join organization_memberships m on m.organization_id = p.organization_id
      where m.user_id = ${userId} and m.status = 'active'`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** An organization and every organization producing modules for it. */
export async function consumableByOrganization(db: Queryable, organizationId: string): Promise<string[]> {
  const rows = await sql<{ id: string }>`
    select ${organizationId} as id
    union
    select producer_id as id from organization_module_producers where organization_id = ${organizationId}`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** Members of the owners team who have accepted their invitation. */
export async function activeOwnerCount(db: Queryable, organizationId: string): Promise<number> {
  const r = await db
    .selectFrom('teams')
    .innerJoin('team_members', 'team_members.team_id', 'teams.id')
    .innerJoin('organization_memberships as m', (j) =>
      j.onRef('m.user_id', '=', 'team_members.user_id').onRef('m.organization_id', '=', 'teams.organization_id'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('teams.organization_id', '=', organizationId)
    .where('teams.is_owners', '=', 1)
    .where('m.status', '=', 'active')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
