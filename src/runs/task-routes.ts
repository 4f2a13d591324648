import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readJson } from '../http/body.js';
import { ApiError, notFound, quoteValue, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { includeSet } from '../organizations/params.js';
import { readableRun } from './access.js';
import { parseCallback, recordCallback, resultForCallback } from './callbacks.js';
import { serializeOutcome, serializeResult, serializeStage } from './serialize.js';
import { getRun, type RunRow } from './store.js';
import { getOutcome, getResult, getStage, listOutcomes, outcomeCounts, resultsOfStages, stagesOfRun, type TaskResultRow } from './task-store.js';

/** Task stages, task results, outcomes and the integrators' callback. */
export function taskStageRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const hidden = (what: string, id: string) => notFound(`${what} ${quoteValue(id)} not found, or you are not authorized to see it`);

  /** The run a stage, result or outcome belongs to, if the caller (a principal) may read it. */
  async function runOf(c: Context<AppEnv>, runId: string | undefined, what: string, id: string): Promise<RunRow> {
    const p = requirePrincipal(c);
    if (!runId) throw hidden(what, id);
    return (await readableRun(deps, { principal: p, taskToken: null }, runId).catch(() => {
      throw hidden(what, id);
    })).run;
  }

  async function renderResults(results: TaskResultRow[], run: RunRow) {
    const counts = await outcomeCounts(deps.db, results.map((r) => r.id));
    return results.map((r) => serializeResult(r, counts.get(r.id) ?? 0, run.plan_only === 1));
  }

  app.get('/runs/:id/task-stages', async (c) => {
    const run = await runOf(c, c.req.param('id'), 'run', c.req.param('id'));
    const page = parsePage(c);
    const stages = await stagesOfRun(deps.db, run.id);
    const slice = stages.slice(page.offset, page.offset + page.size);
    const results = await resultsOfStages(deps.db, slice.map((s) => s.id));
    const data = slice.map((s) => serializeStage(s, results.filter((r) => r.task_stage_id === s.id)));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, stages.length) });
  });

  app.get('/task-stages/:id', async (c) => {
    const id = c.req.param('id');
    const stage = await getStage(deps.db, id);
    const run = await runOf(c, stage?.run_id, 'task stage', id);
    const results = await resultsOfStages(deps.db, [stage!.id]);
    const include = includeSet(c);
    const included = include.has('task_results') || include.has('task-results') ? await renderResults(results, run) : [];
    return jsonApi(c, { data: serializeStage(stage!, results), included });
  });

  app.get('/task-results/:id', async (c) => {
    const id = c.req.param('id');
    const r = await getResult(deps.db, id);
    const run = await runOf(c, r?.run_id, 'task result', id);
    return jsonApi(c, { data: (await renderResults([r!], run))[0]! });
  });

  app.get('/task-results/:id/outcomes', async (c) => {
    const id = c.req.param('id');
    const r = await getResult(deps.db, id);
    await runOf(c, r?.run_id, 'task result', id);
    const page = parsePage(c);
    const { rows, total } = await listOutcomes(deps.db, id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map(serializeOutcome), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  async function visibleOutcome(c: Context<AppEnv>) {
    const id = c.req.param('id')!;
    const o = await getOutcome(deps.db, id);
    const r = o ? await getResult(deps.db, o.task_result_id) : undefined;
    await runOf(c, r?.run_id, 'task result outcome', id);
    return o!;
  }

  app.get('/task-result-outcomes/:id', async (c) => jsonApi(c, { data: serializeOutcome(await visibleOutcome(c)) }));

  app.get('/task-result-outcomes/:id/body', async (c) => {
    const o = await visibleOutcome(c);
    if (o.body === null) throw notFound(`outcome ${quoteValue(o.id)} has no body`);
    return c.body(o.body, 200, { 'Content-Type': 'text/markdown; charset=utf-8' });
  });

  // The callback URL of the run task request. The bearer access token (or HCP's url_code query
  // credential) is the only credential; an API token is not accepted here.
  app.patch('/task-results/:id/callback', async (c) => {
    const token = c.get('taskToken') ?? queryParams(c).get('url_code');
    const r = await resultForCallback(deps, c.req.param('id'), token);
    // A body that is not JSON is a malformed payload: the seed's 422, like every other bad body.
    const body = await readJson(c).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 400) throw unprocessable(err.detail, '');
      throw err;
    });
    const cb = parseCallback(body);
    const updated = await recordCallback(deps, r, cb);
    const run = (await getRun(deps.db, updated.run_id))!;
    return jsonApi(c, { data: (await renderResults([updated], run))[0]! });
  });

  return app;
}
