import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readJson, readResource } from '../http/body.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { parseBindings, relationshipData, type Binding } from '../tags/rules.js';
import { serializeBinding, serializeEffectiveBinding } from '../tags/serialize.js';
import { serializeProject } from './serialize.js';
import {
  addProjectBindings,
  countWorkspaces,
  createProject,
  createProjectSchema,
  deleteProject,
  organizationForProjectCreate,
  organizationForProjects,
  projectBindings,
  projectById,
  projectByIdForUpdate,
  updateProject,
  updateProjectSchema,
  type OrgProjects,
} from './service.js';
import { listProjects, type ProjectRow } from './store.js';

/** Bindings given in a create or update body (relationships.tag-bindings), if any. */
function bodyBindings(relationships: Record<string, unknown>): Binding[] | undefined {
  const rel = relationshipData(relationships, 'tag-bindings');
  return rel.present ? parseBindings(rel.data, '/data/relationships/tag-bindings/data', { allowEmpty: true }) : undefined;
}

/** HCP's projects API: a default project per organization; workspaces belong to exactly one. */
export function projectRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function render(c: Context<AppEnv>, ctx: OrgProjects, project: ProjectRow, status: 200 | 201 = 200) {
    const counts = await countWorkspaces(deps.db, [project]);
    return jsonApi(c, { data: serializeProject(project, ctx.org, ctx.access, counts.get(project.id) ?? 0) }, status);
  }

  app.get('/organizations/:org/projects', async (c) => {
    const { org, access } = await organizationForProjects(deps, requirePrincipal(c), c.req.param('org'));
    const page = parsePage(c);
    const q = queryParams(c);
    const names = q.get('filter[names]')?.split(',').map((n) => n.trim()).filter((n) => n !== '');
    const term = q.get('q') || undefined;
    // A member who may see no workspace sees no project (each holds only workspaces).
    const { rows, total } = access.read
      ? await listProjects(deps.db, { organizationId: org.id, names: names?.length ? names : undefined, q: term }, { limit: page.size, offset: page.offset })
      : { rows: [], total: 0 };
    const counts = await countWorkspaces(deps.db, rows);
    const data = rows.map((p) => serializeProject(p, org, access, counts.get(p.id) ?? 0));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.post('/organizations/:org/projects', async (c) => {
    const p = requirePrincipal(c);
    const target = await organizationForProjectCreate(deps, p, c.req.param('org'));
    const { attributes, relationships } = await readResource(c, 'projects', createProjectSchema);
    const project = await createProject(deps, p, target, attributes, bodyBindings(relationships));
    return render(c, target, project, 201);
  });

  app.get('/projects/:project_id', async (c) => {
    const ctx = await projectById(deps, requirePrincipal(c), c.req.param('project_id'));
    return render(c, ctx, ctx.project);
  });

  app.patch('/projects/:project_id', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await projectByIdForUpdate(deps, p, c.req.param('project_id'));
    const { attributes, relationships } = await readResource(c, 'projects', updateProjectSchema);
    const project = await updateProject(deps, p, ctx, attributes, bodyBindings(relationships));
    return render(c, ctx, project);
  });

  app.delete('/projects/:project_id', async (c) => {
    const p = requirePrincipal(c);
    await deleteProject(deps, p, await projectById(deps, p, c.req.param('project_id')));
    return c.body(null, 204);
  });

  app.get('/projects/:project_id/tag-bindings', async (c) => {
    const ctx = await projectById(deps, requirePrincipal(c), c.req.param('project_id'));
    return jsonApi(c, { data: (await projectBindings(deps, ctx)).map(serializeBinding) });
  });

  // A project inherits nothing: its effective bindings are its own.
  app.get('/projects/:project_id/effective-tag-bindings', async (c) => {
    const ctx = await projectById(deps, requirePrincipal(c), c.req.param('project_id'));
    return jsonApi(c, { data: (await projectBindings(deps, ctx)).map(serializeEffectiveBinding) });
  });

  app.patch('/projects/:project_id/tag-bindings', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await projectByIdForUpdate(deps, p, c.req.param('project_id'));
    const body = (await readJson(c)) as { data?: unknown } | null;
    const bindings = parseBindings(typeof body === 'object' && body !== null ? body.data : undefined, '/data', { allowEmpty: false });
    return jsonApi(c, { data: (await addProjectBindings(deps, p, ctx, bindings)).map(serializeBinding) });
  });

  return app;
}
