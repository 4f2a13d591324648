import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Integrator, callBack, resultBody, type ReceivedRequest } from '../helpers/integrator.js';
import { createOrg } from '../helpers/organizations.js';
import { attachTask, createRun, createTask, putPlan, runStatus, uploadedConfiguration } from '../helpers/runs.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

const ENV = { TERRACE_JOBS: 'false', TERRACE_RUN_TASK_REQUEST_TIMEOUT_MS: '300' };
const clock = new ManualClock('2026-06-01T08:00:00.000Z');
const dataDir = tempDir();
let t: TestServer;
let hook: Integrator;
let mandatoryTask: string;
let advisoryTask: string;
let n = 0;

const local = (u: string) => u.replace(/^https?:\/\/[^/]+/, t.url);

beforeAll(async () => {
  t = await startTestServer(ENV, { clock, dataDir });
  hook = await new Integrator('rules-key').start();
  await createOrg(t, 'acme');
  mandatoryTask = (await createTask(t, 'acme', 'policy', hook.url, 'rules-key')).id;
  advisoryTask = (await createTask(t, 'acme', 'cost', hook.url, 'rules-key')).id;
});

afterAll(async () => {
  await hook.close();
  await t.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A workspace with the given attachments and a run created in it; the run id. */
async function runWith(attachments: [string, string[], 'mandatory' | 'advisory'][]): Promise<string> {
  const ws = await createWorkspace(t, 'acme', `ws-${++n}`);
  for (const [task, stages, level] of attachments) await attachTask(t, ws.id, task, stages, level);
  const res = await createRun(t, ws.id, await uploadedConfiguration(t, ws.id));
  expect(res.status).toBe(201);
  return res.json.data.id;
}

/** Runs due jobs and returns the requests that reached the integrator meanwhile. */
async function pump(): Promise<ReceivedRequest[]> {
  const before = hook.deliveries().length;
  await t.running.jobs.runDue();
  return hook.deliveries().slice(before);
}

const answer = (req: ReceivedRequest, status: string, message?: string) =>
  callBack(local(req.body.task_result_callback_url), req.body.access_token, resultBody(status, message ? { message } : {}));

async function resultOf(id: string) {
  return (await t.api('GET', `/api/v2/task-results/${id}`)).json.data.attributes;
}

describe('mandatory and advisory', () => {
  it('an advisory failure only warns: the stage passes and the run goes on', async () => {
    const runId = await runWith([[mandatoryTask, ['post_plan'], 'mandatory'], [advisoryTask, ['post_plan'], 'advisory']]);
    expect(await runStatus(t, runId)).toBe('planning');
    expect((await putPlan(t, runId)).status).toBe(200);
    const reqs = await pump();
    expect(reqs.map((r) => r.body.task_result_enforcement_level).sort()).toEqual(['advisory', 'mandatory']);
    for (const r of reqs) await answer(r, r.body.task_result_enforcement_level === 'advisory' ? 'failed' : 'passed');
    const run = await t.api('GET', `/api/v2/runs/${runId}?include=task_stages`);
    expect(run.json.data.attributes.status).toBe('planned');
    expect(run.json.included[0].attributes.status).toBe('passed');
  });

  it('a mandatory failure in pre_plan stops the run; later stages are never sent', async () => {
    const runId = await runWith([[mandatoryTask, ['pre_plan', 'post_plan'], 'mandatory']]);
    const [req] = await pump();
    expect((await answer(req!, 'failed', 'policy violated')).status).toBe(200);
    const run = await t.api('GET', `/api/v2/runs/${runId}?include=task_stages`);
    expect(run.json.data.attributes.status).toBe('errored');
    expect(run.json.data.attributes['error-message']).toContain('pre_plan');
    expect(run.json.included.map((s: any) => s.attributes.status)).toEqual(['failed', 'pending']);
    expect((await putPlan(t, runId)).status).toBe(409);
    expect((await t.api('POST', `/api/v2/runs/${runId}/actions/apply`)).status).toBe(409);
    expect(await pump()).toEqual([]);
  });

  it('a mandatory failure in pre_apply stops the run before applying', async () => {
    const runId = await runWith([[mandatoryTask, ['pre_apply'], 'mandatory']]);
    await putPlan(t, runId);
    expect(await runStatus(t, runId)).toBe('planned');
    await t.api('POST', `/api/v2/runs/${runId}/actions/apply`);
    const [req] = await pump();
    await answer(req!, 'failed');
    expect(await runStatus(t, runId)).toBe('errored');
    expect((await t.api('POST', `/api/v2/runs/${runId}/actions/complete-apply`, { body: { status: 'applied' } })).status).toBe(409);
  });

  it('cancel ends open results as canceled; discard leaves a planned run discarded', async () => {
    const runId = await runWith([[mandatoryTask, ['pre_plan'], 'mandatory']]);
    const [req] = await pump();
    const cancel = await t.api('POST', `/api/v2/runs/${runId}/actions/cancel`);
    expect(cancel.json.data.attributes.status).toBe('canceled');
    expect((await resultOf(req!.body.task_result_id)).status).toBe('canceled');
    expect((await answer(req!, 'passed')).status).toBe(409);
    const other = await runWith([]);
    expect(await runStatus(t, other)).toBe('planning');
    await putPlan(t, other);
    expect((await t.api('POST', `/api/v2/runs/${other}/actions/discard`)).json.data.attributes.status).toBe('discarded');
  });
});

describe('delivery', () => {
  it('retries anything but 200 with the same bytes, and sends exactly once after a 200', async () => {
    hook.answers.push({ status: 500 }, { silence: true }, { delayMs: 1000, status: 200 }, { status: 201 });
    const runId = await runWith([[mandatoryTask, ['pre_plan'], 'mandatory']]);
    expect(await pump()).toHaveLength(1); // 500
    expect(await pump()).toHaveLength(0); // backoff: not due yet
    clock.advance(1_000);
    expect(await pump()).toHaveLength(1); // silence: the timeout counts as a failure
    clock.advance(2_000);
    expect(await pump()).toHaveLength(1); // too slow: the same
    clock.advance(4_000);
    expect(await pump()).toHaveLength(1); // 201 is not 200
    clock.advance(8_000);
    const last = await pump(); // 200
    expect(last).toHaveLength(1);
    const all = hook.deliveries().filter((r) => r.body.run_id === runId);
    expect(all).toHaveLength(5);
    for (const r of all) {
      expect(r.raw.equals(all[0]!.raw)).toBe(true);
      expect(r.headers['x-tfc-task-signature']).toBe(all[0]!.headers['x-tfc-task-signature']);
      expect(r.signatureValid).toBe(true);
    }
    clock.advance(600_000);
    await pump();
    expect(hook.deliveries().filter((r) => r.body.run_id === runId)).toHaveLength(5);
  });

  it('gives up after 8 attempts: the result is unreachable, and a mandatory one errors the run', async () => {
    hook.fallback = { status: 503 };
    try {
      const runId = await runWith([[mandatoryTask, ['pre_plan'], 'mandatory']]);
      let sent = 0;
      for (let i = 0; i < 8; i++) {
        sent += (await pump()).length;
        clock.advance(200_000);
      }
      expect(sent).toBe(8);
      const stages = await t.api('GET', `/api/v2/runs/${runId}/task-stages`);
      const result = await resultOf(stages.json.data[0].relationships['task-results'].data[0].id);
      expect(result.status).toBe('unreachable');
      expect(result.message).toContain('HTTP 503');
      expect(await runStatus(t, runId)).toBe('errored');
      expect(await pump()).toHaveLength(0);
    } finally {
      hook.fallback = { status: 200 };
    }
  });
});

describe('the 10-minute callback deadline, enforced from the rows', () => {
  it('errors a silent integrator’s result ten minutes after the request, not before', async () => {
    const runId = await runWith([[mandatoryTask, ['pre_plan'], 'mandatory']]);
    const [req] = await pump();
    await answer(req!, 'running', 'working');
    clock.advance(10 * 60_000 - 1_000);
    await pump();
    expect((await resultOf(req!.body.task_result_id)).status).toBe('running');
    clock.advance(2_000); // past the deadline: its job row is due
    await pump();
    const r = await resultOf(req!.body.task_result_id);
    expect(r.status).toBe('errored');
    expect(r.message).toBe('no final callback within 10 minutes of the request');
    expect(r['status-timestamps']['errored-at']).toBe(clock.now().toISOString());
    expect(await runStatus(t, runId)).toBe('errored');
    expect((await answer(req!, 'passed')).status).toBe(409);
  });

  it('an advisory result that times out lets the run go on', async () => {
    const runId = await runWith([[advisoryTask, ['pre_plan'], 'advisory']]);
    await pump();
    clock.advance(10 * 60_000 + 16_000);
    await pump();
    expect(await runStatus(t, runId)).toBe('planning');
  });

  it('holds across a restart: a new process over the same data errors the result on time', async () => {
    const runId = await runWith([[mandatoryTask, ['pre_plan'], 'mandatory']]);
    const [req] = await pump();
    await t.close({ keepData: true });
    t = await startTestServer(ENV, { clock, dataDir });
    expect((await resultOf(req!.body.task_result_id)).status).toBe('pending');
    // The token issued before the restart still works for a running update.
    expect((await answer(req!, 'running')).status).toBe(200);
    clock.advance(10 * 60_000 + 16_000);
    await pump();
    expect((await resultOf(req!.body.task_result_id)).status).toBe('errored');
    expect(await runStatus(t, runId)).toBe('errored');
    expect(hook.deliveries().filter((r) => r.body.run_id === runId)).toHaveLength(1);
  });
});

describe('callback errors', () => {
  let req: ReceivedRequest;
  let other: ReceivedRequest;

  beforeAll(async () => {
    await runWith([[mandatoryTask, ['pre_plan'], 'mandatory']]);
    [req] = (await pump()) as [ReceivedRequest];
    await runWith([[mandatoryTask, ['pre_plan'], 'mandatory']]);
    [other] = (await pump()) as [ReceivedRequest];
  });

  const url = () => local(req.body.task_result_callback_url);
  const unchanged = async () => {
    const r = await resultOf(req.body.task_result_id);
    expect(r.status).toBe('pending');
    expect(r['task-result-outcomes-count']).toBe(0);
  };

  it('401 without a token, with another result’s token, or with an API token', async () => {
    for (const token of [null, other.body.access_token, t.adminToken, 'garbage']) {
      const r = await callBack(url(), token, resultBody('passed'));
      expect(r.status, String(token)).toBe(401);
      expect(r.json.errors[0].status).toBe('401');
    }
    await unchanged();
  });

  it('422 for a status other than running, passed or failed, and for malformed bodies', async () => {
    const outcome = (attrs: Record<string, unknown>) => resultBody('running', { outcomes: [{ type: 'task-result-outcomes', attributes: attrs }] });
    const bodies: [unknown, string][] = [
      [resultBody('errored'), '/data/attributes/status'],
      [resultBody('PASSED'), '/data/attributes/status'],
      [{ data: { type: 'task-results', attributes: {} } }, '/data/attributes/status'],
      [{ data: { type: 'runs', attributes: { status: 'passed' } } }, '/data/type'],
      [{ status: 'passed' }, '/data'],
      ['{not json', ''],
      [resultBody('running', { url: 'javascript:alert(1)' }), '/data/attributes/url'],
      [outcome({ description: 'no id' }), '/data/relationships/outcomes/data/0/outcome-id'],
      [outcome({ 'outcome-id': 'X' }), '/data/relationships/outcomes/data/0/description'],
      [outcome({ 'outcome-id': 'X', description: 'd', tags: { Severity: [{ label: 'High', level: 'critical' }] } }), '/data/relationships/outcomes/data/0/tags/Severity/0'],
      [outcome({ 'outcome-id': 'X'.repeat(257), description: 'd' }), '/data/relationships/outcomes/data/0/outcome-id'],
      [resultBody('running', { outcomes: Array.from({ length: 101 }, (_, i) => ({ attributes: { 'outcome-id': `O${i}`, description: 'd' } })) }), '/data/relationships/outcomes/data'],
    ];
    for (const [body, pointer] of bodies) {
      const r = await callBack(url(), req.body.access_token, body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(r.json.errors[0].source.pointer).toBe(pointer);
    }
    await unchanged();
  });

  it('accepts outcomes under attributes.outcomes and task_results, then 409 once final, 401 after the grace', async () => {
    const r = await callBack(url(), req.body.access_token, {
      data: { type: 'task_results', attributes: { status: 'passed', outcomes: [{ 'outcome-id': 'A', description: 'ok', tags: [{ label: 'Status', value: [{ label: 'Passed', level: 'info' }] }] }] } },
    }, { 'Content-Type': 'application/json' });
    expect(r.status).toBe(200);
    expect(r.json.data.attributes['task-result-outcomes-count']).toBe(1);
    expect((await callBack(url(), req.body.access_token, resultBody('running'))).status).toBe(409);
    clock.advance(61_000);
    expect((await callBack(url(), req.body.access_token, resultBody('running'))).status).toBe(401);
    const plan = await fetch(`${t.url}/api/v2/runs/${req.body.run_id}`, { headers: { Authorization: `Bearer ${req.body.access_token}` } });
    expect(plan.status).toBe(401);
  });
});
