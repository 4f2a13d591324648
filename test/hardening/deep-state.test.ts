import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, rfc3339 } from '../../src/clock.js';
import { enqueue, FAILED_RUN_AT, JobRunner } from '../../src/jobs/runner.js';
import { capturingLogger, LEVEL, type LogLine } from '../helpers/logs.js';
import { createOrg } from '../helpers/organizations.js';
import { upload } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, md5, pushState, stateSnapshot } from '../helpers/state.js';

let t: TestServer;
let lines: LogLine[];
const clock = new ManualClock('2026-06-01T12:00:00.000Z');

beforeAll(async () => {
  const cap = capturingLogger('info');
  lines = cap.lines;
  t = await startTestServer({ TERRACE_JOBS: 'false' }, { logger: cap.logger, clock });
  await createOrg(t, 'acme');
});

afterAll(async () => {
  await t?.close();
});

const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
function stateWith(value: string, serial = 1): Buffer {
  return Buffer.from(
    `{"version":4,"terraform_version":"1.9.8","serial":${serial},"lineage":"deep-lineage","outputs":{"deep":{"value":${value},"type":"dynamic"}},"resources":[]}`,
  );
}

let wsCount = 0;
async function lockedWorkspace() {
  const ws = await createWorkspace(t, 'acme', `deep-${++wsCount}`);
  await lock(t, ws.id);
  return ws.id;
}

const LIMIT_MESSAGE = 'nests objects and arrays deeper than 256 levels, the limit Terrace accepts for state documents';

describe('deep nesting is refused at intake', () => {
  it('inline: a state whose outputs nest 20,000 levels is a 422 naming the limit, and nothing is stored', async () => {
    const wsId = await lockedWorkspace();
    const before = await stateSnapshot(t);
    const r = await pushState(t, wsId, stateWith(nested(20_000)));
    expect(r.status).toBe(422);
    expect(r.json.errors[0]).toMatchObject({ status: '422', source: { pointer: '/data/attributes/state' } });
    expect(r.json.errors[0].detail).toBe(`the state is not a Terraform state file: it ${LIMIT_MESSAGE}`);
    expect(await stateSnapshot(t)).toEqual(before);
  });

  it('inline: json-state and json-state-outputs nested too deep are 422s too', async () => {
    const wsId = await lockedWorkspace();
    const state = stateWith('"shallow"');
    for (const attr of ['json-state', 'json-state-outputs']) {
      const before = await stateSnapshot(t);
      const r = await pushState(t, wsId, state, { [attr]: Buffer.from(`{"deep":{"value":${nested(20_000)}}}`).toString('base64') });
      expect(r.status, attr).toBe(422);
      expect(r.json.errors[0].source).toEqual({ pointer: `/data/attributes/${attr}` });
      expect(r.json.errors[0].detail).toBe(`${attr} is not usable: it ${LIMIT_MESSAGE}`);
      expect(await stateSnapshot(t)).toEqual(before);
    }
  });

  it('upload URLs: the state and the JSON state nested too deep are 422s', async () => {
    const wsId = await lockedWorkspace();
    const deep = stateWith(nested(20_000));
    const created = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, {
      body: { data: { type: 'state-versions', attributes: { serial: 1, md5: md5(deep), lineage: 'deep-lineage' } } },
    });
    expect(created.status).toBe(201);
    const json = await upload(created.json.data.attributes['hosted-json-state-upload-url'], `{"values":${nested(20_000)}}`);
    expect(json.status).toBe(422);
    expect(json.json.errors[0].detail).toBe(`the JSON state is not usable: it ${LIMIT_MESSAGE}`);
    const r = await upload(created.json.data.attributes['hosted-state-upload-url'], deep);
    expect(r.status).toBe(422);
    expect(r.json.errors[0].detail).toBe(`the state is not a Terraform state file: it ${LIMIT_MESSAGE}`);
    expect((await t.api('GET', `/api/v2/state-versions/${created.json.data.id}`)).status).toBe(404);
    await t.running.jobs.runDue();
  });

  it('accepts and serves nesting within the limit', async () => {
    const wsId = await lockedWorkspace();
    expect((await pushState(t, wsId, stateWith(nested(200)))).status).toBe(201);
    await t.running.jobs.runDue();
    const r = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`);
    expect(r.status).toBe(200);
    expect(r.json.data[0].attributes).toMatchObject({ name: 'deep', type: 'array' });
    expect(JSON.stringify(r.json.data[0].attributes.value)).toBe(nested(200));
  });
});

describe('a job that can never succeed', () => {
  it('fails permanently and visibly, and the outputs answer a clear error instead of 503 for ever', async () => {
    const wsId = await lockedWorkspace();
    const pushed = await pushState(t, wsId, stateWith('"fine"'));
    expect(pushed.status).toBe(201);
    const svId = pushed.json.data.id;
    // The stored state went bad after intake (written before the bound existed, or corrupted).
    const sv = await t.running.deps.db.selectFrom('state_versions').selectAll().where('id', '=', svId).executeTakeFirstOrThrow();
    await t.running.deps.blobs.put(sv.blob_key!, Readable.from([stateWith(nested(20_000))]));
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`)).status).toBe(503);

    const mark = lines.length;
    expect(await t.running.jobs.runDue()).toBe(1);
    const job = await t.running.deps.db.selectFrom('jobs').selectAll().where('kind', '=', 'state.process').where('payload', 'like', `%${svId}%`).executeTakeFirstOrThrow();
    expect(job.run_at).toBe(FAILED_RUN_AT);
    expect(job.last_error).toContain(`state version ${svId} cannot be processed`);
    expect(job.last_error).toContain('deeper than 256 levels');
    const logged = lines.slice(mark).find((l) => l.msg.startsWith('job failed permanently'));
    expect(logged).toMatchObject({ level: LEVEL.error, job: job.id, kind: 'state.process', lastError: job.last_error });

    const outputs = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`);
    expect(outputs.status).toBe(422);
    expect(outputs.headers.get('retry-after')).toBeNull();
    expect(outputs.json.errors[0]).toMatchObject({ status: '422', title: 'state not processable' });
    expect(outputs.json.errors[0].detail).toContain(`the outputs of state version ${svId} cannot be served`);
    expect(outputs.json.errors[0].detail).not.toContain('service unavailable');
    const shown = await t.api('GET', `/api/v2/state-versions/${svId}`);
    expect(shown.json.data.attributes['resources-processed']).toBe(false);
    // Failed once, told once: another pass changes nothing.
    expect(await t.running.jobs.runDue()).toBe(0);
    expect(lines.slice(mark).filter((l) => l.msg.startsWith('job failed permanently'))).toHaveLength(1);

    // A new state version is processed on its own.
    expect((await pushState(t, wsId, stateWith('"again"', 2))).status).toBe(201);
    await t.running.jobs.runDue();
    const fresh = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`);
    expect(fresh.status).toBe(200);
    expect(fresh.json.data[0].attributes.value).toBe('again');
  });

  it('is failed, and its domain told, when its process died during the last attempt', async () => {
    const wsId = await lockedWorkspace();
    const pushed = await pushState(t, wsId, stateWith('"x"'));
    const svId = pushed.json.data.id;
    // Claimed for the eighth and last time by a process that then died (its lease lapses).
    await t.running.deps.db
      .updateTable('jobs')
      .set({ attempts: 8, locked_until: rfc3339(clock.now().getTime() + 60_000), last_error: 'out of memory, probably' })
      .where('payload', 'like', `%${svId}%`)
      .execute();
    expect(await t.running.jobs.runDue()).toBe(0);
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`)).status).toBe(503);
    clock.advance(61_000);
    const mark = lines.length;
    expect(await t.running.jobs.runDue()).toBe(0);
    expect(lines.slice(mark).find((l) => l.msg.startsWith('job failed permanently'))).toMatchObject({ level: LEVEL.error, kind: 'state.process', lastError: 'out of memory, probably' });
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`)).status).toBe(422);
  });

  it('calls the failure hook of its kind once, with the payload and last error, for any kind', async () => {
    const deps = t.running.deps;
    const told: unknown[] = [];
    const runner = new JobRunner(
      deps,
      { 'test.hopeless': { run: async () => Promise.reject(new Error('never')), failed: async (_d, payload, job, lastError) => void told.push({ payload, kind: job.kind, lastError }) } },
      { maxAttempts: 2, backoffMs: () => 1000 },
    );
    await enqueue(deps.db, 'test.hopeless', { n: 1 }, clock.now());
    expect(await runner.runDue()).toBe(1);
    expect(told).toEqual([]);
    clock.advance(1000);
    expect(await runner.runDue()).toBe(1);
    expect(told).toEqual([{ payload: { n: 1 }, kind: 'test.hopeless', lastError: 'never' }]);
    clock.advance(3600_000);
    expect(await runner.runDue()).toBe(0);
    expect(told).toHaveLength(1);
  });

  it('puts a recurring job whose process died during its last attempt back for its next run', async () => {
    const deps = t.running.deps;
    let runs = 0;
    const runner = new JobRunner(deps, { 'test.recurring': async () => void runs++ }, { maxAttempts: 2, recurring: [{ kind: 'test.recurring', everyMs: 60_000, payload: { from: 0 } }] });
    await runner.ensureRecurring();
    // Its last attempt was claimed by a process that died; the lease has lapsed since.
    await deps.db
      .updateTable('jobs')
      .set({ attempts: 2, locked_until: rfc3339(clock.now().getTime() - 1000), run_at: rfc3339(clock.now().getTime() - 2000) })
      .where('unique_key', '=', 'test.recurring')
      .execute();
    expect(await runner.runDue()).toBe(0);
    const row = await deps.db.selectFrom('jobs').selectAll().where('unique_key', '=', 'test.recurring').executeTakeFirstOrThrow();
    expect(row).toMatchObject({ attempts: 0, locked_until: null, run_at: rfc3339(clock.now().getTime() + 60_000) });
    clock.advance(60_000);
    expect(await runner.runDue()).toBe(1);
    expect(runs).toBe(1);
    await deps.db.deleteFrom('jobs').where('unique_key', '=', 'test.recurring').execute();
  });
});
