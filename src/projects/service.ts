import { z } from 'zod';
import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation, type Queryable, type Tx } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { conflict, notFound, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { newId } from '../ids.js';
import { orgAccess, type OrganizationRow } from '../organizations/access.js';
import { getOrganizationById, getOrganizationByName } from '../organizations/store.js';
import type { Binding } from '../tags/rules.js';
import { bindingsOf, replaceBindings, upsertBindings, type TagBindingRow } from '../tags/store.js';
import { projectAccess, type ProjectAccess } from './access.js';
import {
  DEFAULT_PROJECT_NAME,
  defaultProject,
  deleteEmptyProject,
  getProject,
  getProjectByName,
  insertProject,
  updateProjectRow,
  workspaceCounts,
  type ProjectRow,
} from './store.js';

/** HCP's rule: 3-40 letters, digits, spaces, "-" or "_", not starting or ending with a space. */
export const PROJECT_NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9 _-]{1,38}[A-Za-z0-9_-]$/;
const nameSchema = z
  .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
  .regex(PROJECT_NAME_RE, { error: 'must be 3-40 letters, digits, spaces, "-" or "_", not starting or ending with a space' });
const description = z.string({ error: 'must be a string' }).max(10_000, { error: 'must be at most 10000 characters' }).nullable().optional();
/** Unknown attributes are ignored (HCP has settings Terrace does not model). */
export const createProjectSchema = z.object({ name: nameSchema, description });
export const updateProjectSchema = z.object({ name: nameSchema.optional(), description });
export type ProjectInput = z.output<typeof updateProjectSchema>;

export interface OrgProjects {
  org: OrganizationRow;
  access: ProjectAccess;
}
export interface ProjectContext extends OrgProjects {
  project: ProjectRow;
}

const hidden = (what: string) => notFound(`${what} not found, or you are not authorized to see it`);
const nameTaken = (name: string) => unprocessable(`name: ${quoteValue(name)} has already been taken`, '/data/attributes/name');

/** The organization named in a path and what the caller may do with its projects; 404 unless a member. */
export async function organizationForProjects(deps: Deps, p: Principal, orgName: string): Promise<OrgProjects> {
  const org = await getOrganizationByName(deps.db, orgName);
  const access = org ? projectAccess(await orgAccess(deps.db, p, org.id)) : undefined;
  if (!org || !access?.org.member) throw hidden(`organization ${quoteValue(orgName)}`);
  return { org, access };
}

export async function organizationForProjectCreate(deps: Deps, p: Principal, orgName: string): Promise<OrgProjects> {
  const target = await organizationForProjects(deps, p, orgName);
  requireCreate(target);
  return target;
}

function requireCreate({ org, access }: OrgProjects): void {
  authorize(access.manage, () => notFound(`organization ${quoteValue(org.name)} not found, or you are not authorized to create projects in it (that needs manage-projects)`));
}

/** A project the caller may see; 404 otherwise. */
export async function projectById(deps: Deps, p: Principal, id: string): Promise<ProjectContext> {
  const project = await getProject(deps.db, id);
  const org = project ? await getOrganizationById(deps.db, project.organization_id) : undefined;
  const access = org ? projectAccess(await orgAccess(deps.db, p, org.id)) : undefined;
  if (!project || !org || !access?.read) throw hidden(`project ${quoteValue(id)}`);
  return { project, org, access };
}

export function requireManage(ctx: ProjectContext): void {
  authorize(ctx.access.manage, () => hidden(`project ${quoteValue(ctx.project.id)}`));
}

/** A project the caller may change; 404 otherwise. Call before reading a body. */
export async function projectByIdForUpdate(deps: Deps, p: Principal, id: string): Promise<ProjectContext> {
  const ctx = await projectById(deps, p, id);
  requireManage(ctx);
  return ctx;
}

export async function countWorkspaces(db: Queryable, projects: ProjectRow[]): Promise<Map<string, number>> {
  return workspaceCounts(db, projects.map((p) => p.id));
}

export async function createProject(deps: Deps, p: Principal, target: OrgProjects, a: ProjectInput & { name: string }, bindings: Binding[] | undefined): Promise<ProjectRow> {
  requireCreate(target);
  const { org } = target;
  if (await getProjectByName(deps.db, org.id, a.name)) throw nameTaken(a.name);
  const now = rfc3339(deps.clock.now());
  const row: ProjectRow = {
    id: newId('prj'),
    organization_id: org.id,
    name: a.name,
    name_lower: a.name.toLowerCase(),
    description: a.description ?? '',
    is_default: 0,
    created_at: now,
    updated_at: now,
  };
  try {
    await inTransaction(deps.db, async (tx) => {
      await insertProject(tx, row);
      if (bindings) await replaceBindings(tx, { projectId: row.id }, bindings, now);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(a.name);
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), project: row.id, organization: org.id, name: row.name }, 'project created');
  return row;
}

export async function updateProject(deps: Deps, p: Principal, ctx: ProjectContext, a: ProjectInput, bindings: Binding[] | undefined): Promise<ProjectRow> {
  requireManage(ctx);
  const { project, org } = ctx;
  const name = a.name ?? project.name;
  if (name.toLowerCase() !== project.name_lower) {
    const other = await getProjectByName(deps.db, org.id, name);
    if (other && other.id !== project.id) throw nameTaken(name);
  }
  const now = rfc3339(deps.clock.now());
  const changes = { name, name_lower: name.toLowerCase(), description: a.description !== undefined ? (a.description ?? '') : project.description, updated_at: now };
  try {
    await inTransaction(deps.db, async (tx) => {
      await updateProjectRow(tx, project.id, changes);
      // go-tfe: tag-bindings on an update replace the project's bindings.
      if (bindings) await replaceBindings(tx, { projectId: project.id }, bindings, now);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(name);
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), project: project.id, changed: Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined) }, 'project updated');
  return { ...project, ...changes };
}

/** Refuses the default project (422) and a project that still holds workspaces (409). */
export async function deleteProject(deps: Deps, p: Principal, ctx: ProjectContext): Promise<void> {
  requireManage(ctx);
  const { project } = ctx;
  if (project.is_default === 1) throw unprocessable(`${quoteValue(project.name)} is the organization's default project and cannot be deleted`);
  if (!(await deleteEmptyProject(deps.db, project.id))) {
    const n = (await workspaceCounts(deps.db, [project.id])).get(project.id) ?? 0;
    throw conflict(`project ${quoteValue(project.name)} still holds ${n} workspace${n === 1 ? '' : 's'}; move or delete them first`);
  }
  deps.logger.info({ actor: principalLabel(p), project: project.id, organization: project.organization_id, name: project.name }, 'project deleted');
}

/** The project's bindings (projectById has decided the caller may see it). */
export async function projectBindings(deps: Deps, ctx: ProjectContext): Promise<TagBindingRow[]> {
  return bindingsOf(deps.db, { projectId: ctx.project.id });
}

/** Adds bindings to the project, replacing the values of keys it has (PATCH …/tag-bindings). */
export async function addProjectBindings(deps: Deps, p: Principal, ctx: ProjectContext, bindings: Binding[]): Promise<TagBindingRow[]> {
  requireManage(ctx);
  await inTransaction(deps.db, (tx) => upsertBindings(tx, { projectId: ctx.project.id }, bindings, rfc3339(deps.clock.now())));
  deps.logger.info({ actor: principalLabel(p), project: ctx.project.id, keys: bindings.map((b) => b.key) }, 'project tag bindings added');
  return bindingsOf(deps.db, { projectId: ctx.project.id });
}

/**
 * The organization-create hook: every organization starts with its "Default Project", which holds
 * workspaces created without one. Runs inside the transaction that creates the organization.
 */
export async function createDefaultProject(tx: Tx, deps: Deps, org: OrganizationRow): Promise<void> {
  const now = rfc3339(deps.clock.now());
  await insertProject(tx, {
    id: newId('prj'),
    organization_id: org.id,
    name: DEFAULT_PROJECT_NAME,
    name_lower: DEFAULT_PROJECT_NAME.toLowerCase(),
    description: '',
    is_default: 1,
    created_at: now,
    updated_at: now,
  });
}

/**
 * The project a workspace is to belong to: the one named (it must be a project of the
 * workspace's organization), or the organization's default project.
 */
export async function projectForWorkspace(db: Queryable, org: OrganizationRow, id: string | null): Promise<ProjectRow> {
  if (id === null) {
    const d = await defaultProject(db, org.id);
    if (!d) throw new Error(`organization ${org.id} has no default project`);
    return d;
  }
  const project = await getProject(db, id);
  if (!project || project.organization_id !== org.id) {
    throw unprocessable(`relationships.project: ${quoteValue(id)} is not a project of organization ${quoteValue(org.name)}`, '/data/relationships/project/data/id');
  }
  return project;
}
