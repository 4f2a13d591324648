import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, rfc3339 } from '../../src/clock.js';
import { enqueue, JobRunner, PermanentJobError } from '../../src/jobs/runner.js';
import { createOrg } from '../helpers/organizations.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, pushState, stateFixture } from '../helpers/state.js';

const S1 = stateFixture('outputs-serial1.json');
const servers: TestServer[] = [];
const dirs: string[] = [];

async function start(dataDir: string, env: Record<string, string>, clock = new ManualClock(new Date())) {
  const t = await startTestServer(env, { dataDir, clock });
  servers.push(t);
  return t;
}

afterEach(async () => {
  for (const t of servers.splice(0)) await t.close().catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function until<T>(fn: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('processing is durable', () => {
  it('finishes after a restart: the job written before the stop is run by the next process', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const a = await start(dir, { TERRACE_JOBS: 'false' });
    await createOrg(a, 'acme');
    const ws = await createWorkspace(a, 'acme', 'app');
    await lock(a, ws.id);
    expect((await pushState(a, ws.id, S1)).status).toBe(201);
    expect((await a.api('GET', `/api/v2/workspaces/${ws.id}/current-state-version-outputs`)).status).toBe(503);
    await a.close();

    // The next process runs its jobs on its own, without anyone asking.
    const b = await start(dir, {});
    const outputs = await until(async () => {
      const r = await b.api('GET', `/api/v2/workspaces/${ws.id}/current-state-version-outputs`);
      return r.status === 200 ? r.json.data : undefined;
    }, 'outputs after restart');
    expect(outputs).toHaveLength(13);
    expect(outputs.find((o: any) => o.attributes.name === 'number_out').attributes.value).toBe(42);
  });

  it('takes over a job whose holder died mid-run once its lease has expired', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const clock = new ManualClock('2026-03-01T10:00:00.000Z');
    const a = await start(dir, { TERRACE_JOBS: 'false' }, clock);
    await createOrg(a, 'acme');
    const ws = await createWorkspace(a, 'acme', 'app');
    await lock(a, ws.id);
    expect((await pushState(a, ws.id, S1)).status).toBe(201);
    // A runner claimed it (lease of a minute) and the process died before finishing.
    await a.running.deps.db
      .updateTable('jobs')
      .set({ locked_until: rfc3339(clock.now().getTime() + 60_000), attempts: 1 })
      .where('kind', '=', 'state.process')
      .execute();
    await a.close();

    const b = await start(dir, { TERRACE_JOBS: 'false' }, clock);
    expect(await b.running.jobs.runDue()).toBe(0);
    expect((await b.api('GET', `/api/v2/workspaces/${ws.id}/current-state-version-outputs`)).status).toBe(503);
    clock.advance(61_000);
    expect(await b.running.jobs.runDue()).toBe(1);
    const r = await b.api('GET', `/api/v2/workspaces/${ws.id}/current-state-version-outputs`);
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(13);
    const left = await b.running.deps.db.selectFrom('jobs').selectAll().where('kind', '=', 'state.process').execute();
    expect(left).toEqual([]);
  });

  it('processes a pushed state by itself when the runner is on', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const t = await start(dir, {});
    await createOrg(t, 'acme');
    const ws = await createWorkspace(t, 'acme', 'app');
    await lock(t, ws.id);
    const sv = await pushState(t, ws.id, S1);
    const processed = await until(async () => {
      const r = await t.api('GET', `/api/v2/state-versions/${sv.json.data.id}`);
      return r.json.data.attributes['resources-processed'] === true ? r.json.data : undefined;
    }, 'resources-processed');
    expect(processed.relationships.outputs.data).toHaveLength(13);
  });
});

describe('the job runner', () => {
  it('retries a failing job with backoff, records the error, and gives up after the last attempt', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const clock = new ManualClock('2026-03-01T10:00:00.000Z');
    const t = await start(dir, { TERRACE_JOBS: 'false' }, clock);
    const deps = t.running.deps;
    let calls = 0;
    const runner = new JobRunner(
      deps,
      {
        flaky: async () => {
          calls++;
          if (calls < 3) throw new Error(`boom ${calls}`);
        },
        broken: async () => {
          throw new PermanentJobError('cannot ever work');
        },
        hopeless: async () => {
          throw new Error('always');
        },
      },
      { maxAttempts: 3, backoffMs: (n) => n * 1000 },
    );
    const job = await enqueue(deps.db, 'flaky', { x: 1 }, clock.now());
    await enqueue(deps.db, 'broken', null, clock.now());
    const hopeless = await enqueue(deps.db, 'hopeless', null, clock.now());
    expect(await runner.runDue()).toBe(3);
    const row = async (id: string) => deps.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
    expect(await row(job)).toMatchObject({ attempts: 1, last_error: 'boom 1', locked_until: null, run_at: '2026-03-01T10:00:01.000Z' });
    expect(await runner.runDue()).toBe(0);
    clock.advance(1000);
    expect(await runner.runDue()).toBe(2);
    expect(await row(job)).toMatchObject({ attempts: 2, last_error: 'boom 2', run_at: '2026-03-01T10:00:03.000Z' });
    clock.advance(2000);
    // flaky succeeds on its third attempt; hopeless fails its third and last.
    expect(await runner.runDue()).toBe(2);
    expect(await row(job)).toBeUndefined();
    expect(calls).toBe(3);
    // Parked, not deleted: its last error stays for an operator to see; no more attempts.
    expect(await row(hopeless)).toMatchObject({ attempts: 3, last_error: 'always' });
    const broken = await deps.db.selectFrom('jobs').selectAll().where('kind', '=', 'broken').executeTakeFirstOrThrow();
    expect(broken).toMatchObject({ attempts: 3, last_error: 'cannot ever work' });
    clock.advance(3600_000);
    expect(await runner.runDue()).toBe(0);
  });
});
