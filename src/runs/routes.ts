import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { authorize, capabilityUrl } from '../http/authorized.js';
import { sendBlob } from '../http/blob-response.js';
import { declaredLength, readJson, readResource, relationshipId, requestBody, zodToApiError } from '../http/body.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { includeSet } from '../organizations/params.js';
import { workspaceById, workspaceByIdForUpdate } from '../workspaces/service.js';
import { readableRun, runBytesReadable, runForUpdate, type Caller } from './access.js';
import {
  createConfigurationVersion,
  createConfigurationVersionSchema,
  downloadableConfiguration,
  readableConfigurationVersion,
  receiveConfigurationUpload,
} from './configversions.js';
import { serializeConfigurationVersion, serializeResult, serializeRun, serializeStage } from './serialize.js';
import { completeApply, completeApplySchema, createRun, createRunSchema, receivePlanJson, runAction } from './service.js';
import { listConfigurationVersions, listRuns, type RunRow } from './store.js';
import { outcomeCounts, resultsOfStages, stagesOfRun } from './task-store.js';

/** PUT /api/v2/runs/:id/plan/json-output carries a whole plan: it has its own limit (TERRACE_MAX_PLAN_JSON_BYTES). */
export function isPlanJsonUpload(method: string, path: string): boolean {
  return method === 'PUT' && /^\/api\/v2\/runs\/[^/]+\/plan\/json-output\/?$/.test(path);
}

export const callerOf = (c: Context<AppEnv>): Caller => ({ principal: c.get('principal'), taskToken: c.get('taskToken') });

/** Configuration versions and runs: HCP's API plus Terrace's two executor endpoints. */
export function runRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function renderRun(c: Context<AppEnv>, run: RunRow, canManage: boolean, status: 200 | 201 = 200) {
    const stages = await stagesOfRun(deps.db, run.id);
    const include = includeSet(c);
    const included = [];
    if (include.has('task_stages') || include.has('task-stages')) {
      const results = await resultsOfStages(deps.db, stages.map((s) => s.id));
      const counts = await outcomeCounts(deps.db, results.map((r) => r.id));
      for (const s of stages) included.push(serializeStage(s, results.filter((r) => r.task_stage_id === s.id)));
      if (include.has('task_stages.task_results')) included.push(...results.map((r) => serializeResult(r, counts.get(r.id) ?? 0, run.plan_only === 1)));
    }
    return jsonApi(c, { data: serializeRun(run, stages, canManage), included }, status);
  }

  app.post('/workspaces/:workspace_id/configuration-versions', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await workspaceByIdForUpdate(deps, p, c.req.param('workspace_id'));
    const { attributes } = await readResource(c, 'configuration-versions', createConfigurationVersionSchema);
    const { cv, uploadUrl } = await createConfigurationVersion(deps, p, ctx, attributes);
    return jsonApi(c, { data: serializeConfigurationVersion(cv, uploadUrl) }, 201);
  });

  app.get('/workspaces/:workspace_id/configuration-versions', async (c) => {
    const ctx = await workspaceById(deps, requirePrincipal(c), c.req.param('workspace_id'));
    const page = parsePage(c);
    const { rows, total } = await listConfigurationVersions(deps.db, ctx.ws.id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map((cv) => serializeConfigurationVersion(cv)), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.get('/configuration-versions/:id', async (c) => {
    const { cv } = await readableConfigurationVersion(deps, requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: serializeConfigurationVersion(cv) });
  });

  const sendConfiguration = async (c: Context<AppEnv>, cvId: string) => {
    const key = await downloadableConfiguration(deps, callerOf(c), cvId);
    const refuse = () => notFound(`configuration version ${quoteValue(cvId)} has no configuration to download`);
    return sendBlob(c, deps, key, { contentType: 'application/octet-stream', ranges: true, refuse });
  };

  app.get('/configuration-versions/:id/download', (c) => sendConfiguration(c, c.req.param('id')));

  // HCP's other path to the same bytes: the configuration of a run.
  app.get('/runs/:id/configuration-version/download', async (c) => {
    const { run } = await readableRun(deps, callerOf(c), c.req.param('id'));
    return sendConfiguration(c, run.configuration_version_id);
  });

  app.post('/runs', async (c) => {
    const p = requirePrincipal(c);
    // The workspace is named in the body, so any caller may have it read; but the workspace is
    // decided (404 unless the caller manages it) before anything else in the body is judged.
    authorize(true, () => notFound());
    const body = await readJson(c);
    const data = (body as { data?: unknown } | null)?.data as { relationships?: unknown; attributes?: unknown; type?: unknown } | undefined;
    const rel = data && typeof data.relationships === 'object' && data.relationships !== null ? (data.relationships as Record<string, unknown>) : {};
    const wsId = relationshipId(rel, 'workspace');
    if (!wsId) throw unprocessable('relationships.workspace.data.id is required: the workspace (ws-…) to run in', '/data/relationships/workspace');
    const ctx = await workspaceByIdForUpdate(deps, p, wsId);
    if (data?.type !== 'runs') throw unprocessable(`data.type must be "runs", got ${quoteValue(data?.type ?? null)}`, '/data/type');
    const parsed = createRunSchema.safeParse(data.attributes ?? {});
    if (!parsed.success) throw zodToApiError(parsed.error, '/data/attributes');
    const run = await createRun(deps, p, ctx, parsed.data, relationshipId(rel, 'configuration-version'));
    return renderRun(c, run, true, 201);
  });

  app.get('/workspaces/:workspace_id/runs', async (c) => {
    const ctx = await workspaceById(deps, requirePrincipal(c), c.req.param('workspace_id'));
    const page = parsePage(c);
    const { rows, total } = await listRuns(deps.db, ctx.ws.id, { limit: page.size, offset: page.offset });
    const data = [];
    for (const run of rows) data.push(serializeRun(run, await stagesOfRun(deps.db, run.id), ctx.access.manage));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.get('/runs/:id', async (c) => {
    const ctx = await readableRun(deps, callerOf(c), c.req.param('id'));
    return renderRun(c, ctx.run, ctx.access?.manage ?? false);
  });

  for (const action of ['apply', 'discard', 'cancel'] as const) {
    app.post(`/runs/:id/actions/${action}`, async (c) => {
      const p = requirePrincipal(c);
      const ctx = await runForUpdate(deps, p, c.req.param('id'));
      // HCP's optional {"comment": …} body is not needed: the action is the path.
      const run = await runAction(deps, p, ctx.run, action);
      return renderRun(c, run, true);
    });
  }

  app.post('/runs/:id/actions/complete-apply', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await runForUpdate(deps, p, c.req.param('id'));
    const body = (await readJson(c)) as { data?: { attributes?: unknown } } | null;
    const input = body && typeof body === 'object' && body.data && typeof body.data === 'object' ? body.data.attributes : body;
    const parsed = completeApplySchema.safeParse(input);
    if (!parsed.success) throw zodToApiError(parsed.error, '');
    return renderRun(c, await completeApply(deps, p, ctx.run, parsed.data), true);
  });

  app.put('/runs/:id/plan/json-output', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await runForUpdate(deps, p, c.req.param('id'));
    const run = await receivePlanJson(deps, p, ctx, requestBody(c), declaredLength(c));
    return renderRun(c, run, true);
  });

  app.get('/runs/:id/plan/json-output', async (c) => {
    const { run } = await runBytesReadable(deps, callerOf(c), c.req.param('id'));
    // Never 204: go-tfe turns it into empty bytes and integrators then fail in their JSON parser.
    const refuse = () => notFound(`run ${quoteValue(run.id)} has no plan JSON yet: the executor hands it over with PUT /api/v2/runs/${run.id}/plan/json-output`);
    if (!run.plan_json_blob_key) throw refuse();
    return sendBlob(c, deps, run.plan_json_blob_key, { contentType: 'application/json', ranges: false, refuse });
  });

  return app;
}

/** The one-time configuration upload URL, outside /api: the token in the path is the credential. */
export function configurationUploadRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.put('/uploads/configuration-versions/:token', async (c) => {
    capabilityUrl();
    const cv = await receiveConfigurationUpload(deps, c.req.param('token'), requestBody(c), declaredLength(c));
    return jsonApi(c, { data: { id: cv.id, type: 'configuration-versions', attributes: { status: cv.status, size: cv.size } } });
  });
  return app;
}
