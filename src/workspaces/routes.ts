import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readJson, readResource } from '../http/body.js';
import { ApiError } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { tagNamesOf } from '../tags/store.js';
import { parseWorkspaceRelations } from './relations.js';
import { serializeWorkspace } from './serialize.js';
import {
  createWorkspace,
  deleteWorkspace,
  lockWorkspace,
  organizationForWorkspaceCreate,
  unlockWorkspace,
  updateWorkspace,
  workspaceById,
  workspaceByIdForUpdate,
  workspaceByName,
  workspaceByNameForUpdate,
  workspacesOf,
  type WorkspaceContext,
} from './service.js';
import { createWorkspaceSchema, lockSchema, updateWorkspaceSchema } from './settings.js';
import { currentStateVersions, type WorkspaceRow } from './store.js';

/** HCP's workspaces API: by organization and name, and by id. */
export function workspaceRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function render(c: Context<AppEnv>, ctx: Omit<WorkspaceContext, 'ws'>, ws: WorkspaceRow, status: 200 | 201 = 200) {
    const current = (await currentStateVersions(deps.db, [ws])).get(ws.id);
    const tags = (await tagNamesOf(deps.db, [ws.id])).get(ws.id) ?? [];
    return jsonApi(c, { data: serializeWorkspace(ws, ctx.org, ctx.access, current, tags) }, status);
  }

  const byName = (c: Context<AppEnv>) => workspaceByName(deps, requirePrincipal(c), c.req.param('org')!, c.req.param('name')!);
  const byId = (c: Context<AppEnv>) => workspaceById(deps, requirePrincipal(c), c.req.param('workspace_id')!);

  app.post('/organizations/:org/workspaces', async (c) => {
    const p = requirePrincipal(c);
    const { org, access } = await organizationForWorkspaceCreate(deps, p, c.req.param('org'));
    const { attributes, relationships } = await readResource(c, 'workspaces', createWorkspaceSchema);
    const ws = await createWorkspace(deps, p, org, access, attributes, parseWorkspaceRelations(attributes['tag-names'], relationships));
    return render(c, { org, access }, ws, 201);
  });

  app.get('/organizations/:org/workspaces', async (c) => {
    const p = requirePrincipal(c);
    const page = parsePage(c);
    const { org, access, rows, total, current } = await workspacesOf(deps, p, c.req.param('org'), queryParams(c), { limit: page.size, offset: page.offset });
    const tags = await tagNamesOf(deps.db, rows.map((ws) => ws.id));
    const data = rows.map((ws) => serializeWorkspace(ws, org, access, current.get(ws.id), tags.get(ws.id) ?? []));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  const byNameForUpdate = (c: Context<AppEnv>) =>
    workspaceByNameForUpdate(deps, requirePrincipal(c), c.req.param('org')!, c.req.param('name')!);
  const byIdForUpdate = (c: Context<AppEnv>) => workspaceByIdForUpdate(deps, requirePrincipal(c), c.req.param('workspace_id')!);

  for (const [path, find, findForUpdate] of [
    ['/organizations/:org/workspaces/:name', byName, byNameForUpdate],
    ['/workspaces/:workspace_id', byId, byIdForUpdate],
  ] as const) {
    app.get(path, async (c) => {
      const ctx = await find(c);
      return render(c, ctx, ctx.ws);
    });

    app.patch(path, async (c) => {
      const p = requirePrincipal(c);
      const ctx = await findForUpdate(c);
      const { attributes, relationships } = await readResource(c, 'workspaces', updateWorkspaceSchema);
      const ws = await updateWorkspace(deps, p, ctx, attributes, parseWorkspaceRelations(attributes['tag-names'], relationships));
      return render(c, ctx, ws);
    });

    app.delete(path, async (c) => {
      const p = requirePrincipal(c);
      await deleteWorkspace(deps, p, await find(c), { safe: false });
      return c.body(null, 204);
    });

    app.post(`${path}/actions/safe-delete`, async (c) => {
      const p = requirePrincipal(c);
      await deleteWorkspace(deps, p, await find(c), { safe: true });
      return c.body(null, 204);
    });
  }

  app.post('/workspaces/:workspace_id/actions/lock', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await byIdForUpdate(c);
    // go-tfe sends {"reason":"…"} as plain JSON; other clients send nothing or a JSON:API body.
    let reason: string | null = null;
    if ((c.req.header('content-length') ?? '0') !== '0' || c.req.header('transfer-encoding')) {
      // A body that does not parse is ignored; anything else (the read-before-authorize guard) is not.
      const body = await readJson(c).catch((err: unknown) => {
        if (err instanceof ApiError) return {};
        throw err;
      });
      const raw = (body as { reason?: unknown; data?: { attributes?: { reason?: unknown } } }) ?? {};
      const parsed = lockSchema.safeParse({ reason: raw.reason ?? raw.data?.attributes?.reason });
      reason = parsed.success ? (parsed.data.reason ?? null) : null;
    }
    const ws = await lockWorkspace(deps, p, ctx, reason);
    return render(c, ctx, ws);
  });

  app.post('/workspaces/:workspace_id/actions/unlock', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await byId(c);
    return render(c, ctx, await unlockWorkspace(deps, p, ctx, { force: false }));
  });

  app.post('/workspaces/:workspace_id/actions/force-unlock', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await byId(c);
    return render(c, ctx, await unlockWorkspace(deps, p, ctx, { force: true }));
  });

  return app;
}
