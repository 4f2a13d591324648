import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Integrator, callBack, resultBody } from '../helpers/integrator.js';
import { createOrg } from '../helpers/organizations.js';
import { attachTask, createRun, createTask, putPlan, uploadedConfiguration } from '../helpers/runs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

let t: TestServer;
let hook: Integrator;
const clock = new ManualClock('2026-01-01T00:00:00.000Z');

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_RETENTION_SWEEP_INTERVAL: '3600' }, { clock });
  hook = await new Integrator('').start();
});

afterAll(async () => {
  await hook.close();
  await t.close();
});

const blobs = async () => {
  const keys: string[] = [];
  for await (const b of t.running.deps.blobs.list('organizations/')) keys.push(b.key);
  return keys;
};

describe('data retention of runs', () => {
  it('removes final runs (plan JSON, stages, outcome bodies) and unused configurations older than N days; never a run still going', async () => {
    await createOrg(t, 'acme');
    const ws = (await createWorkspace(t, 'acme', 'app')).id;
    const task = await createTask(t, 'acme', 'scan', hook.url, '');
    await attachTask(t, ws, task.id, ['post_plan'], 'advisory');
    // An old finished run with an outcome body, an old unused configuration, and an old run still planning.
    const done = (await createRun(t, ws, await uploadedConfiguration(t, ws), { 'plan-only': true })).json.data.id;
    await putPlan(t, done);
    await t.running.jobs.runDue();
    const req = hook.deliveries().at(-1)!;
    await callBack(req.body.task_result_callback_url.replace(/^https?:\/\/[^/]+/, t.url), req.body.access_token,
      resultBody('passed', { outcomes: [{ attributes: { 'outcome-id': 'A', description: 'd', body: '# body' } }] }));
    expect((await t.api('GET', `/api/v2/runs/${done}`)).json.data.attributes.status).toBe('planned_and_finished');
    const unused = await uploadedConfiguration(t, ws);
    const goingCv = await uploadedConfiguration(t, ws);
    const going = (await createRun(t, ws, goingCv)).json.data.id;
    expect((await blobs()).length).toBe(4);
    const policy = await t.api('POST', '/api/v2/organizations/acme/relationships/data-retention-policy', {
      body: { data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 30 } } },
    });
    expect(policy.status).toBe(201);
    clock.advance(31 * 24 * 3600_000);
    await t.running.jobs.runDue();
    expect((await t.api('GET', `/api/v2/runs/${done}`)).status).toBe(404);
    expect((await t.api('GET', `/api/v2/configuration-versions/${unused}`)).status).toBe(404);
    expect((await t.api('GET', `/api/v2/runs/${going}`)).json.data.attributes.status).toBe('planning');
    expect((await t.api('GET', `/api/v2/configuration-versions/${goingCv}`)).status).toBe(200);
    const outcomes = await t.running.deps.db.selectFrom('task_result_outcomes').selectAll().execute();
    expect(outcomes).toEqual([]);
    const left = await blobs();
    expect(left).toHaveLength(1);
    expect(left[0]).toContain(goingCv);
  });
});

describe('deleting what runs hang off', () => {
  it('deleting a workspace with runs, and an organization with tasks, removes their rows', async () => {
    await createOrg(t, 'gone');
    const ws = (await createWorkspace(t, 'gone', 'app')).id;
    const task = await createTask(t, 'gone', 'scan', hook.url, '');
    await attachTask(t, ws, task.id, ['pre_plan'], 'mandatory');
    const run = (await createRun(t, ws, await uploadedConfiguration(t, ws))).json.data.id;
    expect((await t.api('DELETE', `/api/v2/workspaces/${ws}`)).status).toBe(204);
    expect((await t.api('GET', `/api/v2/runs/${run}`)).status).toBe(404);
    expect(await t.running.deps.db.selectFrom('task_results').selectAll().where('run_id', '=', run).execute()).toEqual([]);
    const ws2 = (await createWorkspace(t, 'gone', 'two')).id;
    await attachTask(t, ws2, task.id, ['pre_plan'], 'mandatory');
    await createRun(t, ws2, await uploadedConfiguration(t, ws2));
    expect((await t.api('DELETE', '/api/v2/organizations/gone')).status).toBe(204);
    expect(await t.running.deps.db.selectFrom('run_tasks').selectAll().where('id', '=', task.id).execute()).toEqual([]);
    expect(await t.running.deps.db.selectFrom('runs').selectAll().where('workspace_id', '=', ws2).execute()).toEqual([]);
  });
});
