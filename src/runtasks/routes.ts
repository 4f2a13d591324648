import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readResource, relationshipId } from '../http/body.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { includeSet } from '../organizations/params.js';
import { serializeTask, serializeWorkspaceTask } from './serialize.js';
import {
  createTask,
  deleteTask,
  organizationForTaskCreate,
  organizationForTasks,
  runTaskEntitlements,
  taskForManagement,
  updateTask,
  visibleTask,
  type VisibleTask,
} from './service.js';
import { createTaskSchema, updateTaskSchema, workspaceTaskSchema } from './settings.js';
import { listRunTasks, listWorkspaceRunTasks, workspaceTasksOf, type RunTaskRow } from './store.js';
import { attachTask, detachTask, updateAttachment, workspaceForTaskChanges, workspaceForTasks, workspaceTask } from './workspace-tasks.js';

/** HCP's organization run tasks and workspace run tasks. */
export function runTaskRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function renderTasks(c: Context<AppEnv>, tasks: RunTaskRow[], org: VisibleTask['org']) {
    const attachments = await workspaceTasksOf(deps.db, tasks.map((t) => t.id));
    const showGlobal = runTaskEntitlements(deps, org).global;
    const data = tasks.map((t) => serializeTask(t, org, attachments.get(t.id) ?? [], showGlobal));
    const include = includeSet(c);
    const included = include.has('workspace_tasks') || include.has('workspace-tasks') ? [...attachments.values()].flat().map(serializeWorkspaceTask) : [];
    return { data, included };
  }

  app.get('/organizations/:org/tasks', async (c) => {
    const { org } = await organizationForTasks(deps, requirePrincipal(c), c.req.param('org'));
    const page = parsePage(c);
    const { rows, total } = await listRunTasks(deps.db, org.id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { ...(await renderTasks(c, rows, org)), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.post('/organizations/:org/tasks', async (c) => {
    const p = requirePrincipal(c);
    const { org } = await organizationForTaskCreate(deps, p, c.req.param('org'));
    const { attributes } = await readResource(c, 'tasks', createTaskSchema);
    const task = await createTask(deps, p, org, attributes);
    const { data, included } = await renderTasks(c, [task], org);
    return jsonApi(c, { data: data[0]!, included }, 201);
  });

  app.get('/tasks/:id', async (c) => {
    const { task, org } = await visibleTask(deps, requirePrincipal(c), c.req.param('id'));
    const { data, included } = await renderTasks(c, [task], org);
    return jsonApi(c, { data: data[0]!, included });
  });

  app.get('/tasks/:id/relationships/workspace-tasks', async (c) => {
    const { task } = await visibleTask(deps, requirePrincipal(c), c.req.param('id'));
    const page = parsePage(c);
    const all = (await workspaceTasksOf(deps.db, [task.id])).get(task.id) ?? [];
    const data = all.slice(page.offset, page.offset + page.size).map(serializeWorkspaceTask);
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, all.length) });
  });

  app.patch('/tasks/:id', async (c) => {
    const p = requirePrincipal(c);
    const vt = await taskForManagement(deps, p, c.req.param('id'));
    const { attributes } = await readResource(c, 'tasks', updateTaskSchema);
    const task = await updateTask(deps, p, vt, attributes);
    const { data, included } = await renderTasks(c, [task], vt.org);
    return jsonApi(c, { data: data[0]!, included });
  });

  app.delete('/tasks/:id', async (c) => {
    const p = requirePrincipal(c);
    await deleteTask(deps, p, await taskForManagement(deps, p, c.req.param('id')));
    return c.body(null, 204);
  });

  app.get('/workspaces/:workspace_id/tasks', async (c) => {
    const ctx = await workspaceForTasks(deps, requirePrincipal(c), c.req.param('workspace_id'));
    const page = parsePage(c);
    const { rows, total } = await listWorkspaceRunTasks(deps.db, ctx.ws.id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map(serializeWorkspaceTask), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.post('/workspaces/:workspace_id/tasks', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await workspaceForTaskChanges(deps, p, c.req.param('workspace_id'));
    const { attributes, relationships } = await readResource(c, 'workspace-tasks', workspaceTaskSchema);
    const row = await attachTask(deps, p, ctx, attributes, relationshipId(relationships, 'task'));
    return jsonApi(c, { data: serializeWorkspaceTask(row) }, 201);
  });

  app.get('/workspaces/:workspace_id/tasks/:id', async (c) => {
    const ctx = await workspaceForTasks(deps, requirePrincipal(c), c.req.param('workspace_id'));
    return jsonApi(c, { data: serializeWorkspaceTask(await workspaceTask(deps, ctx, c.req.param('id'))) });
  });

  app.patch('/workspaces/:workspace_id/tasks/:id', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await workspaceForTaskChanges(deps, p, c.req.param('workspace_id'));
    const row = await workspaceTask(deps, ctx, c.req.param('id'));
    const { attributes } = await readResource(c, 'workspace-tasks', workspaceTaskSchema);
    return jsonApi(c, { data: serializeWorkspaceTask(await updateAttachment(deps, p, row, attributes)) });
  });

  app.delete('/workspaces/:workspace_id/tasks/:id', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await workspaceForTaskChanges(deps, p, c.req.param('workspace_id'));
    await detachTask(deps, p, await workspaceTask(deps, ctx, c.req.param('id')));
    return c.body(null, 204);
  });

  return app;
}
