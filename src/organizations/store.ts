import { sql, type Expression, type SqlBool } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { AgentPoolsTable, DataRetentionPoliciesTable } from '../db/schema.js';
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

export async function getOrganizationById(db: Queryable, id: string): Promise<OrganizationRow | undefined> {
  return (await db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst()) as OrganizationRow | undefined;
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
