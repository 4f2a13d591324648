import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readIdentifiers, readJson } from '../http/body.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { parseBindings, parseTagRefs } from '../tags/rules.js';
import { serializeBinding, serializeEffectiveBinding, serializeOrganizationTag, serializeTag } from '../tags/serialize.js';
import { listOrganizationTags } from '../tags/store.js';
import { organizationForWorkspaces, workspaceById, workspaceByIdForUpdate } from './service.js';
import {
  addBindings,
  addTags,
  addTagToWorkspaces,
  deleteOrganizationTags,
  effectiveWorkspaceBindings,
  removeAllBindings,
  removeTags,
  requireTagManagement,
  tagByIdForUpdate,
  workspaceBindings,
  workspaceTags,
} from './tags.js';

/** The `data` member of a body that is a JSON object, else undefined (the parsers say what is wrong). */
async function bodyData(c: Context<AppEnv>): Promise<unknown> {
  const body = await readJson(c);
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { data?: unknown }).data : undefined;
}

/** Workspace tags (single strings), key/value tag bindings and the organization's tag list. */
export function workspaceTagRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const byId = (c: Context<AppEnv>) => workspaceById(deps, requirePrincipal(c), c.req.param('workspace_id')!);
  const byIdForUpdate = (c: Context<AppEnv>) => workspaceByIdForUpdate(deps, requirePrincipal(c), c.req.param('workspace_id')!);

  app.get('/workspaces/:workspace_id/relationships/tags', async (c) => {
    const ctx = await byId(c);
    const page = parsePage(c);
    const all = await workspaceTags(deps, ctx);
    const data = all.slice(page.offset, page.offset + page.size).map(serializeTag);
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, all.length) });
  });

  app.post('/workspaces/:workspace_id/relationships/tags', async (c) => {
    const ctx = await byIdForUpdate(c);
    await addTags(deps, requirePrincipal(c), ctx, parseTagRefs(await bodyData(c), '/data', { allowEmpty: false }));
    return c.body(null, 204);
  });

  app.delete('/workspaces/:workspace_id/relationships/tags', async (c) => {
    const ctx = await byIdForUpdate(c);
    await removeTags(deps, requirePrincipal(c), ctx, parseTagRefs(await bodyData(c), '/data', { allowEmpty: false }));
    return c.body(null, 204);
  });

  app.get('/workspaces/:workspace_id/tag-bindings', async (c) => {
    const ctx = await byId(c);
    return jsonApi(c, { data: (await workspaceBindings(deps, ctx)).map(serializeBinding) });
  });

  app.get('/workspaces/:workspace_id/effective-tag-bindings', async (c) => {
    const ctx = await byId(c);
    return jsonApi(c, { data: (await effectiveWorkspaceBindings(deps, ctx)).map(serializeEffectiveBinding) });
  });

  app.patch('/workspaces/:workspace_id/tag-bindings', async (c) => {
    const ctx = await byIdForUpdate(c);
    const bindings = parseBindings(await bodyData(c), '/data', { allowEmpty: false });
    return jsonApi(c, { data: (await addBindings(deps, requirePrincipal(c), ctx, bindings)).map(serializeBinding) });
  });

  app.delete('/workspaces/:workspace_id/tag-bindings', async (c) => {
    const ctx = await byIdForUpdate(c);
    await removeAllBindings(deps, requirePrincipal(c), ctx);
    return c.body(null, 204);
  });

  app.get('/organizations/:org/tags', async (c) => {
    const { org } = await organizationForWorkspaces(deps, requirePrincipal(c), c.req.param('org'));
    const page = parsePage(c);
    const q = queryParams(c);
    const filter = { organizationId: org.id, q: q.get('search[q]') || undefined, excludeWorkspaceId: q.get('filter[exclude][taggable][id]') || undefined };
    const { rows, total } = await listOrganizationTags(deps.db, filter, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map((t) => serializeOrganizationTag(t, org.name)), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  // go-tfe's OrganizationTags.Delete: {"data":[{"type":"tags","id":"tag-…"}]}.
  app.delete('/organizations/:org/tags', async (c) => {
    const p = requirePrincipal(c);
    const { org, access } = await organizationForWorkspaces(deps, p, c.req.param('org'));
    requireTagManagement(org, access);
    await deleteOrganizationTags(deps, p, org, access, await readIdentifiers(c, 'tags'));
    return c.body(null, 204);
  });

  app.post('/tags/:tag_id/relationships/workspaces', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await tagByIdForUpdate(deps, p, c.req.param('tag_id'));
    await addTagToWorkspaces(deps, p, ctx, await readIdentifiers(c, 'workspaces'));
    return c.body(null, 204);
  });

  return app;
}
