import { sql, type SqlBool } from 'kysely';
import type { Queryable } from '../db/index.js';
import { containsInsensitive } from '../organizations/store.js';
import type { TeamMember, TeamRow } from './serialize.js';

export async function getTeam(db: Queryable, id: string): Promise<TeamRow | undefined> {
  return db.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertTeam(db: Queryable, team: TeamRow): Promise<void> {
  await db.insertInto('teams').values(team).execute();
}

export async function updateTeamRow(db: Queryable, team: TeamRow): Promise<void> {
  await db
    .updateTable('teams')
    .set({ name: team.name, name_lower: team.name_lower, visibility: team.visibility, permissions: team.permissions })
    .where('id', '=', team.id)
    .execute();
}

/** Members go with their team (team_members cascades). */
export async function deleteTeamRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('teams').where('id', '=', id).execute();
}

export async function teamByName(db: Queryable, organizationId: string, name: string): Promise<TeamRow | undefined> {
  return db.selectFrom('teams').selectAll().where('organization_id', '=', organizationId).where('name_lower', '=', name.toLowerCase()).executeTakeFirst();
}

export async function isTeamMember(db: Queryable, teamId: string, userId: string): Promise<boolean> {
  return (await db.selectFrom('team_members').select('user_id').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst()) !== undefined;
}

/** Adds one member; adding a member twice changes nothing. */
export async function addTeamMember(db: Queryable, teamId: string, userId: string, now: string): Promise<void> {
  await db
    .insertInto('team_members')
    .values({ team_id: teamId, user_id: userId, created_at: now })
    .onConflict((oc) => oc.columns(['team_id', 'user_id']).doNothing())
    .execute();
}

export async function removeTeamMemberRows(db: Queryable, teamId: string, userIds: string[]): Promise<void> {
  if (userIds.length === 0) return;
  await db.deleteFrom('team_members').where('team_id', '=', teamId).where('user_id', 'in', userIds).execute();
}

export interface TeamFilter {
  organizationId: string;
  /** Undefined: every team; otherwise organization-visible teams plus these (secret) ones. */
  visibleSecretIds?: Set<string>;
  q?: string;
  names?: string[];
}

function filtered(db: Queryable, f: TeamFilter) {
  let q = db.selectFrom('teams').where('organization_id', '=', f.organizationId);
  if (f.visibleSecretIds) {
    const ids = [...f.visibleSecretIds];
    q = q.where((eb) => eb.or([eb('visibility', '=', 'organization'), ids.length ? eb('id', 'in', ids) : sql<SqlBool>`1 = 0`]));
  }
  if (f.q !== undefined) q = q.where(containsInsensitive('name', f.q));
  if (f.names) q = q.where('name_lower', 'in', f.names.map((n) => n.toLowerCase()));
  return q;
}

export async function listTeams(db: Queryable, f: TeamFilter, page: { limit: number; offset: number }) {
  const base = filtered(db, f);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('is_owners', 'desc').orderBy('name_lower').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

/** Members of the given teams with their organization membership ids, by team id. */
export async function teamMembers(db: Queryable, teamIds: string[]): Promise<Map<string, TeamMember[]>> {
  const out = new Map<string, TeamMember[]>(teamIds.map((id) => [id, []]));
  if (teamIds.length === 0) return out;
  const rows = await db
    .selectFrom('team_members as tm')
    .innerJoin('teams as t', 't.id', 'tm.team_id')
    .innerJoin('organization_memberships as m', (j) => j.onRef('m.user_id', '=', 'tm.user_id').onRef('m.organization_id', '=', 't.organization_id'))
    .innerJoin('users as u', 'u.id', 'tm.user_id')
    .select(['tm.team_id', 'tm.user_id', 'm.id as membership_id'])
    .where('tm.team_id', 'in', teamIds)
    .orderBy('u.username_lower')
    .execute();
  for (const r of rows) out.get(r.team_id)?.push({ userId: r.user_id, membershipId: r.membership_id });
  return out;
}
