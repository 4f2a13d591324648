import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { RUN_TASK_DEADLINE } from '../../src/runs/delivery.js';
import { DELIVER_TASK_REQUEST } from '../../src/runs/progress.js';
import { startRoundRobin, type RoundRobin } from '../helpers/instances.js';
import { Integrator, callBack, resultBody } from '../helpers/integrator.js';
import { capturingLogger, type LogLine } from '../helpers/logs.js';
import { createOrg } from '../helpers/organizations.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { attachTask, createRun, createTask, uploadedConfiguration } from '../helpers/runs.js';
import { reachedAt, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';
import { postgresAdminUrl, testStore } from '../helpers/store.js';

/**
 * Run task requests and the 10-minute callback deadline with two instances on one PostgreSQL
 * database, both running jobs, behind one address (a round-robin proxy): every request and every
 * deadline is one job row, and of two runners only one takes it. The instances share one manual
 * clock, so ten minutes pass at once for both. postgres project only.
 */

const KEY = 'two-instances-hmac-key';
const clock = new ManualClock('2026-06-01T08:00:00.000Z');
const logs = [capturingLogger('info'), capturingLogger('info')];
let db: { url: string; drop(): Promise<void> };
let proxy: RoundRobin;
let a: TestServer;
let b: TestServer;
/** Calls through the proxy: each request to the next instance. */
let lb: TestServer;
let hook: Integrator;
let taskId: string;
let n = 0;

/** Polls (bounded: about 30 s) until check returns something other than undefined. */
async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function jobsOf(kind: string): Promise<number> {
  const r = await a.running.deps.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('kind', '=', kind).executeTakeFirstOrThrow();
  return Number(r.n);
}

/** count runs, each in its own workspace with the task mandatory in pre_plan, all through the proxy; their ids. */
async function runs(count: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const ws = await createWorkspace(lb, 'acme', `ws-${++n}`);
      await attachTask(lb, ws.id, taskId, ['pre_plan'], 'mandatory');
      const run = await createRun(lb, ws.id, await uploadedConfiguration(lb, ws.id));
      expect(run.status).toBe(201);
      return run.json.data.id as string;
    }),
  );
}

/** The task results of the given runs that reached the integrator, by run: task_result_id of each request. */
function requestsByRun(runIds: string[]): Map<string, string[]> {
  const by = new Map<string, string[]>(runIds.map((id) => [id, []]));
  for (const r of hook.deliveries()) by.get(r.body.run_id)?.push(r.body.task_result_id);
  return by;
}

const linesOf = (pred: (l: LogLine) => boolean) => logs.flatMap((l) => l.lines.filter(pred));

describe.skipIf(testStore !== 'postgres')('run tasks with two instances on one PostgreSQL', () => {
  beforeAll(async () => {
    db = await createTestDatabase(postgresAdminUrl());
    proxy = await startRoundRobin();
    const env = { TERRACE_DATABASE_URL: db.url, TERRACE_SECRET_KEY: 'one-key-shared-by-both-instances-0123456789', TERRACE_PUBLIC_URL: proxy.url };
    // One after the other: the second start finds the schema migrated.
    a = await startTestServer(env, { clock, logger: logs[0]!.logger });
    b = await startTestServer(env, { clock, logger: logs[1]!.logger });
    proxy.targets.push(a.url, b.url);
    lb = reachedAt(a, proxy.url);
    hook = await new Integrator(KEY).start();
    await createOrg(lb, 'acme');
    taskId = (await createTask(lb, 'acme', 'policy', hook.url, KEY)).id;
  }, 60_000);

  afterAll(async () => {
    await hook?.close();
    await a?.close();
    await b?.close();
    await proxy?.close();
    await db?.drop();
  });

  it('sends each task result’s request exactly once, whichever instance queued it', async () => {
    // The integrator answers 200, then passes the result (through the proxy, to either instance).
    hook.onRequest = (req) => {
      void callBack(req.body.task_result_callback_url, req.body.access_token, resultBody('passed'));
    };
    const ids = await runs(12);
    await until('every run to pass its stage and move on', async () => {
      const statuses = await Promise.all(ids.map(async (id) => (await lb.api('GET', `/api/v2/runs/${id}`)).json.data.attributes.status));
      return statuses.every((s) => s === 'planning') ? statuses : undefined;
    });
    // No delivery is left to anyone: nothing can be sent again.
    await until('no delivery job left', async () => ((await jobsOf(DELIVER_TASK_REQUEST)) === 0 ? true : undefined));
    hook.onRequest = null;

    const by = requestsByRun(ids);
    for (const [runId, results] of by) {
      expect(results, `requests for ${runId}`).toHaveLength(1);
      const stages = await lb.api('GET', `/api/v2/runs/${runId}/task-stages`);
      expect(stages.status).toBe(200);
      expect(stages.json.data[0].relationships['task-results'].data.map((r: any) => r.id)).toEqual(results);
      expect((await lb.api('GET', `/api/v2/task-results/${results[0]}`)).json.data.attributes.status).toBe('passed');
    }
    expect(hook.deliveries().every((r) => r.signatureValid)).toBe(true);
    // Both instances took part in the requests (round robin).
    expect(proxy.served.get(new URL(a.url).origin)).toBeGreaterThan(10);
    expect(proxy.served.get(new URL(b.url).origin)).toBeGreaterThan(10);
  });

  it('times each silent result out exactly once: one errored result, one failed stage, one run transition', async () => {
    hook.fallback = { status: 200 };
    const ids = await runs(8);
    await until('every request to be sent and recorded', async () =>
      (await jobsOf(DELIVER_TASK_REQUEST)) === 0 && [...requestsByRun(ids).values()].every((r) => r.length === 1) ? true : undefined,
    );
    const deliveredBefore = hook.deliveries().length;
    expect(await jobsOf(RUN_TASK_DEADLINE)).toBeGreaterThanOrEqual(8);

    clock.advance(10 * 60_000 + 1_000);
    const erroredAt = clock.now().toISOString();
    await until('every run to error', async () => {
      const statuses = await Promise.all(ids.map(async (id) => (await lb.api('GET', `/api/v2/runs/${id}`)).json.data.attributes.status));
      return statuses.every((s) => s === 'errored') ? statuses : undefined;
    });
    await until('no deadline job left', async () => ((await jobsOf(RUN_TASK_DEADLINE)) === 0 ? true : undefined));

    for (const [runId, [resultId]] of requestsByRun(ids)) {
      const r = (await lb.api('GET', `/api/v2/task-results/${resultId}`)).json.data.attributes;
      expect(r.status).toBe('errored');
      expect(r.message).toBe('no final callback within 10 minutes of the request');
      expect(r['status-timestamps']['errored-at']).toBe(erroredAt);
      const stages = await lb.api('GET', `/api/v2/runs/${runId}/task-stages`);
      expect(stages.json.data.map((s: any) => s.attributes.status)).toEqual(['failed']);
      expect(stages.json.data[0].attributes['status-timestamps']['failed-at']).toBe(erroredAt);
      // One transition, by one of the two instances.
      const moved = linesOf((l) => l.msg === 'run moved' && l.run === runId && l.event === 'stage_failed');
      expect(moved).toHaveLength(1);
      expect(moved[0]).toMatchObject({ to: 'errored' });
      // Final: a late callback is refused.
      const req = hook.deliveries().find((x) => x.body.task_result_id === resultId)!;
      expect((await callBack(req.body.task_result_callback_url, req.body.access_token, resultBody('passed'))).status).toBe(409);
    }
    // Timing out sends nothing.
    expect(hook.deliveries()).toHaveLength(deliveredBefore);
  });
});
