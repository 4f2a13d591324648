import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { ProjectsTable } from '../db/schema.js';
import { containsInsensitive } from '../organizations/store.js';

export type ProjectRow = Selectable<ProjectsTable>;

export const DEFAULT_PROJECT_NAME = 'Default Project';

export async function getProject(db: Queryable, id: string): Promise<ProjectRow | undefined> {
  return db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function getProjectByName(db: Queryable, organizationId: string, name: string): Promise<ProjectRow | undefined> {
  return db.selectFrom('projects').selectAll().where('organization_id', '=', organizationId).where('name_lower', '=', name.toLowerCase()).executeTakeFirst();
}

export async function defaultProject(db: Queryable, organizationId: string): Promise<ProjectRow | undefined> {
  return db.selectFrom('projects').selectAll().where('organization_id', '=', organizationId).where('is_default', '=', 1).executeTakeFirst();
}

export interface ProjectFilter {
  organizationId: string;
  /** Exact names, case-insensitive (filter[names], comma-separated). */
  names?: string[];
  /** Substring of the name, case-insensitive (q). */
  q?: string;
}

export async function listProjects(db: Queryable, f: ProjectFilter, page: { limit: number; offset: number }) {
  let base = db.selectFrom('projects').where('organization_id', '=', f.organizationId);
  if (f.names) base = base.where('name_lower', 'in', f.names.map((n) => n.toLowerCase()));
  if (f.q !== undefined) base = base.where(containsInsensitive('name', f.q));
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('name_lower').orderBy('id').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

/** How many workspaces each project holds. */
export async function workspaceCounts(db: Queryable, projectIds: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>(projectIds.map((id) => [id, 0]));
  if (projectIds.length === 0) return out;
  const rows = await db
    .selectFrom('workspaces')
    .select(['project_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('project_id', 'in', projectIds)
    .groupBy('project_id')
    .execute();
  for (const r of rows) out.set(r.project_id, Number(r.n));
  return out;
}

export async function insertProject(db: Queryable, row: ProjectRow): Promise<void> {
  await db.insertInto('projects').values(row).execute();
}

export async function updateProjectRow(db: Queryable, id: string, changes: Partial<Pick<ProjectRow, 'name' | 'name_lower' | 'description' | 'updated_at'>>): Promise<void> {
  await db.updateTable('projects').set(changes).where('id', '=', id).execute();
}

/** Deletes the project if it still holds no workspace (checked in the same statement); false otherwise. */
export async function deleteEmptyProject(db: Queryable, id: string): Promise<boolean> {
  const res = await db
    .deleteFrom('projects')
    .where('id', '=', id)
    .where('is_default', '=', 0)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('workspaces').select('workspaces.id').whereRef('workspaces.project_id', '=', 'projects.id'))))
    .executeTakeFirst();
  return Number(res.numDeletedRows) === 1;
}
