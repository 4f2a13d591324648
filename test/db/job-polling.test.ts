import { afterEach, describe, expect, it } from 'vitest';
import type { KyselyPlugin } from 'kysely';
import { ManualClock } from '../../src/clock.js';
import type { Deps } from '../../src/deps.js';
import { enqueue, JobRunner } from '../../src/jobs/runner.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * How often a job runner looks at the jobs table when nothing is due: each empty look doubles the
 * wait, from pollMs up to idlePollMs, but never past the time the earliest queued job falls due.
 * An idle instance then costs the store a few statements every idlePollMs (2 s by default), not
 * every 250 ms. Real timers, a manual clock for what is due. Runs on SQLite and PostgreSQL.
 */

const servers: TestServer[] = [];
const runners: JobRunner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.stop();
  for (const t of servers.splice(0)) await t.close();
});

/** A runner's own view of the store, counting its empty looks (the statement that finds the next due time). */
async function setUp() {
  const clock = new ManualClock('2026-05-01T12:00:00.000Z');
  const t = await startTestServer({ TERRACE_JOBS: 'false' }, { clock });
  servers.push(t);
  let emptyLooks = 0;
  const counter: KyselyPlugin = {
    transformQuery(args) {
      if (args.node.kind === 'SelectQueryNode' && JSON.stringify(args.node).includes('min(case')) emptyLooks++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  const deps: Deps = { ...t.running.deps, db: t.running.deps.db.withPlugin(counter) };
  const ran: string[] = [];
  const start = (opts: { pollMs: number; idlePollMs: number }) => {
    const runner = new JobRunner(deps, { work: async (_d, payload) => void ran.push((payload as { n: string }).n) }, opts);
    runners.push(runner);
    runner.start();
    return runner;
  };
  return { clock, deps, ran, start, looks: () => emptyLooks };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('an idle job runner', () => {
  it('looks at the table less and less often while nothing is due, up to idlePollMs', async () => {
    const { start, looks } = await setUp();
    start({ pollMs: 20, idlePollMs: 160 });
    await sleep(1500);
    // Every 20 ms that would be about 75 looks; doubling from 20 ms to 160 ms, about 12
    // (20, 40, 80, 160, 160, ...). A slow machine makes fewer, never more.
    expect(looks()).toBeGreaterThanOrEqual(3);
    expect(looks()).toBeLessThanOrEqual(16);
  });

  it('still finds a job another instance queued (no wake-up here) once its wait is up', async () => {
    const { clock, deps, ran, start, looks } = await setUp();
    start({ pollMs: 20, idlePollMs: 160 });
    await until('the runner to reach its longest wait', () => looks() >= 5);
    // enqueue without wakeJobs: what a row written by another instance looks like here.
    await enqueue(deps.db, 'work', { n: 'from elsewhere' }, clock.now());
    await until('the job to run', () => ran.length === 1);
    expect(ran).toEqual(['from elsewhere']);
  });

  it('looks again when the earliest queued job falls due, however long its idle wait has grown', async () => {
    const { clock, deps, ran, start, looks } = await setUp();
    // Due 200 ms from now by the store's clock. With only the doubling wait (up to a minute),
    // ten looks would take 50 + 100 + ... + 25,600 ms; capped at the job's due time, under 2 s.
    await enqueue(deps.db, 'work', { n: 'later' }, new Date(clock.now().getTime() + 200));
    start({ pollMs: 50, idlePollMs: 60_000 });
    await until('ten looks while the job is not yet due', () => looks() >= 10, 8_000);
    expect(ran).toEqual([]);
    clock.advance(200);
    await until('the job to run once due', () => ran.length === 1, 8_000);
    expect(ran).toEqual(['later']);
    expect(await deps.db.selectFrom('jobs').select('id').where('kind', '=', 'work').execute()).toEqual([]);
  });

  it('goes back to looking every pollMs after a pass that ran a job', async () => {
    const { clock, deps, ran, start, looks } = await setUp();
    start({ pollMs: 20, idlePollMs: 60_000 });
    // Let the idle wait grow past a second (20, 40, ..., 1,280 ms), then hand it work.
    await until('a long idle wait', () => looks() >= 7);
    await enqueue(deps.db, 'work', { n: 'one' }, clock.now());
    await until('the job to run', () => ran.length === 1, 20_000);
    // The wait starts again from pollMs (20, 40, 80, 160, 320 ms: five looks in 0.6 s); carried
    // on from where it was, the next wait alone would be 2.5 s or more.
    const before = looks();
    await until('four looks after the job ran', () => looks() >= before + 4, 2_000);
    expect(ran).toEqual(['one']);
  });
});
