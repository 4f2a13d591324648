import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Integrator, callBack, resultBody } from '../helpers/integrator.js';
import { RFC3339, createOrg } from '../helpers/organizations.js';
import { CONFIG_TGZ, PLAN_JSON, attachTask, createRun, createTask, putPlan, runStatus, uploadedConfiguration } from '../helpers/runs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

let t: TestServer;
let hook: Integrator;
let wsId: string;
let cvId: string;
let taskId: string;
const clock = new ManualClock('2026-05-01T10:00:00.000Z');
const PUBLIC = 'https://terrace.example.com';

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_PUBLIC_URL: PUBLIC }, { clock });
  hook = await new Integrator('k3y').start();
  await createOrg(t, 'acme');
  const ws = await createWorkspace(t, 'acme', 'app', t.adminToken, { 'working-directory': 'infra' });
  wsId = ws.id;
  taskId = (await createTask(t, 'acme', 'scanner', hook.url, 'k3y')).id;
  await attachTask(t, wsId, taskId, ['pre_plan', 'post_plan', 'pre_apply', 'post_apply'], 'mandatory');
  cvId = await uploadedConfiguration(t, wsId);
});

afterAll(async () => {
  await hook.close();
  await t.close();
});

/** The payload the integrator got last, with its URLs turned into ones this test can call. */
const local = (u: string) => u.replace(PUBLIC, t.url);

describe('a run driven through the API, with a task at every stage', () => {
  let runId: string;
  const payloads: any[] = [];

  async function deliverNext(stage: string) {
    const before = hook.deliveries().length;
    await t.running.jobs.runDue();
    const got = hook.deliveries();
    expect(got.length).toBe(before + 1);
    const req = got.at(-1)!;
    expect(req.body.stage).toBe(stage);
    payloads.push(req);
    return req;
  }

  it('creates every stage and result up front and starts pre_plan', async () => {
    const res = await createRun(t, wsId, cvId, { 'vcs-branch': 'main', 'vcs-repo-url': 'https://git.example.com/acme/app' });
    expect(res.status).toBe(201);
    const run = res.json.data;
    runId = run.id;
    expect(run.id).toMatch(/^run-[A-Za-z0-9]{16}$/);
    expect(run.type).toBe('runs');
    expect(run.attributes.status).toBe('pre_plan_running');
    expect(run.attributes['status-timestamps']['pre-plan-running-at']).toMatch(RFC3339);
    expect(run.attributes['created-at']).toMatch(RFC3339);
    expect(run.attributes['plan-only']).toBe(false);
    const stages = res.json.included.filter((x: any) => x.type === 'task-stages');
    expect(stages.map((s: any) => s.attributes.stage)).toEqual(['pre_plan', 'post_plan', 'pre_apply', 'post_apply']);
    expect(stages.map((s: any) => s.attributes.status)).toEqual(['running', 'pending', 'pending', 'pending']);
    for (const s of stages) {
      expect(s.id).toMatch(/^ts-/);
      expect(s.attributes['created-at']).toMatch(RFC3339);
      expect(s.relationships['task-results'].data).toHaveLength(1);
    }
    expect(run.relationships['task-stages'].data.map((d: any) => d.id)).toEqual(stages.map((s: any) => s.id));
  });

  it('sends the seed payload with every field, exact types, compact JSON, signed over the raw bytes', async () => {
    const req = await deliverNext('pre_plan');
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/hook');
    expect(req.signatureValid).toBe(true);
    expect(req.headers['x-tfc-task-signature']).toMatch(/^[0-9a-f]{128}$/);
    expect(req.headers['x-terrace-task-signature']).toBe(req.headers['x-tfc-task-signature']);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toMatch(/^Terrace\/1\.0 /);
    expect(req.headers.authorization).toBeUndefined();
    expect(req.raw.toString('utf8')).toBe(JSON.stringify(req.body));
    const b = req.body;
    const resultId = b.task_result_id;
    expect(Object.keys(b)).toEqual([
      'payload_version', 'stage', 'access_token', 'capabilities', 'configuration_version_download_url', 'configuration_version_id',
      'is_speculative', 'organization_name', 'run_app_url', 'run_created_at', 'run_created_by', 'run_id', 'run_message',
      'task_result_callback_url', 'task_result_enforcement_level', 'task_result_id', 'vcs_branch', 'vcs_commit_url',
      'vcs_pull_request_url', 'vcs_repo_url', 'workspace_app_url', 'workspace_id', 'workspace_name', 'workspace_working_directory',
    ]);
    expect(b).toEqual({
      payload_version: 1,
      stage: 'pre_plan',
      access_token: expect.stringMatching(/^[A-Za-z0-9]{14}\.runtask\.[A-Za-z0-9]{48}$/),
      capabilities: { outcomes: true },
      configuration_version_download_url: `${PUBLIC}/api/v2/configuration-versions/${cvId}/download`,
      configuration_version_id: cvId,
      is_speculative: false,
      organization_name: 'acme',
      run_app_url: `${PUBLIC}/app/acme/workspaces/app/runs/${runId}`,
      run_created_at: '2026-05-01T10:00:00.000Z',
      run_created_by: 'admin',
      run_id: runId,
      run_message: 'from CI',
      task_result_callback_url: `${PUBLIC}/api/v2/task-results/${resultId}/callback`,
      task_result_enforcement_level: 'mandatory',
      task_result_id: expect.stringMatching(/^taskrs-/),
      vcs_branch: 'main',
      vcs_commit_url: null,
      vcs_pull_request_url: null,
      vcs_repo_url: 'https://git.example.com/acme/app',
      workspace_app_url: `${PUBLIC}/app/acme/workspaces/app`,
      workspace_id: wsId,
      workspace_name: 'app',
      workspace_working_directory: 'infra',
    });
    // Exactly once: another pass sends nothing.
    await t.running.jobs.runDue();
    expect(hook.deliveries().length).toBe(1);
  });

  it('lets the access token read its run and configuration, and nothing else', async () => {
    const b = payloads[0]!.body;
    const auth = { Authorization: `Bearer ${b.access_token}` };
    const cv = await fetch(local(b.configuration_version_download_url), { headers: auth });
    expect(cv.status).toBe(200);
    expect(cv.headers.get('content-encoding')).toBeNull();
    expect(Buffer.from(await cv.arrayBuffer()).equals(CONFIG_TGZ)).toBe(true);
    const viaRun = await fetch(`${t.url}/api/v2/runs/${runId}/configuration-version/download`, { headers: auth });
    expect(Buffer.from(await viaRun.arrayBuffer()).equals(CONFIG_TGZ)).toBe(true);
    const run = await fetch(`${t.url}/api/v2/runs/${runId}`, { headers: auth });
    expect(run.status).toBe(200);
    expect(((await run.json()) as any).data.id).toBe(runId);
    for (const path of [`/api/v2/workspaces/${wsId}`, `/api/v2/organizations/acme`, `/api/v2/task-results/${b.task_result_id}`, `/api/v2/tasks/${taskId}`]) {
      expect((await fetch(t.url + path, { headers: auth })).status, path).toBe(401);
    }
    expect((await fetch(`${t.url}/api/v2/runs/${runId}`, { headers: { Authorization: `Bearer ${b.access_token.slice(0, -1)}x` } })).status).toBe(401);
  });

  it('records running (repeatable) with outcomes, then passed moves the run to planning', async () => {
    const b = payloads[0]!.body;
    const outcome = {
      type: 'task-result-outcomes',
      attributes: { 'outcome-id': 'CKV-1', description: 'bucket lacks MFA delete', body: '# Details\nfix it', url: 'https://scanner.example/CKV-1', tags: { Severity: [{ label: 'High', level: 'error' }], Status: [{ label: 'Open' }] } },
    };
    for (let i = 0; i < 2; i++) {
      const r = await callBack(local(b.task_result_callback_url), b.access_token, resultBody('running', { message: `scanning ${i}`, outcomes: [outcome] }));
      expect(r.status).toBe(200);
      expect(r.json.data.attributes.status).toBe('running');
      expect(r.json.data.attributes.message).toBe(`scanning ${i}`);
    }
    expect(await runStatus(t, runId)).toBe('pre_plan_running');
    const done = await callBack(local(b.task_result_callback_url), b.access_token, resultBody('passed', { message: '1 finding', url: 'https://scanner.example/r/1' }));
    expect(done.status).toBe(200);
    expect(done.json.data.attributes).toMatchObject({ status: 'passed', message: '1 finding', url: 'https://scanner.example/r/1', 'task-result-outcomes-count': 1, 'workspace-task-enforcement-level': 'mandatory', stage: 'pre_plan', 'is-speculative': false });
    expect(done.json.data.attributes['status-timestamps']).toEqual({ 'running-at': expect.stringMatching(RFC3339), 'passed-at': expect.stringMatching(RFC3339) });
    const run = await t.api('GET', `/api/v2/runs/${runId}`);
    expect(run.json.data.attributes.status).toBe('planning');
    expect(run.json.data.attributes['status-timestamps']).toHaveProperty('pre-plan-completed-at');
    // Outcomes in the read shape, the body behind links.body.
    const outs = await t.api('GET', `/api/v2/task-results/${b.task_result_id}/outcomes`);
    expect(outs.status).toBe(200);
    expect(outs.json.meta.pagination['total-count']).toBe(1);
    const o = outs.json.data[0];
    expect(o.id).toMatch(/^tro-/);
    expect(o.attributes).toEqual({
      'outcome-id': 'CKV-1',
      description: 'bucket lacks MFA delete',
      url: 'https://scanner.example/CKV-1',
      tags: [{ label: 'Severity', value: [{ label: 'High', level: 'error' }] }, { label: 'Status', value: [{ label: 'Open', level: 'none' }] }],
      'created-at': expect.stringMatching(RFC3339),
    });
    const body = await t.api('GET', o.links.body);
    expect(body.status).toBe(200);
    expect(body.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(body.text).toBe('# Details\nfix it');
    // Final: another callback is a 409, the token still valid for the grace.
    expect((await callBack(local(b.task_result_callback_url), b.access_token, resultBody('failed'))).status).toBe(409);
  });

  it('takes the plan JSON, fires post_plan with plan_json_api_url the token can read', async () => {
    const put = await putPlan(t, runId);
    expect(put.status).toBe(200);
    expect(put.json.data.attributes.status).toBe('post_plan_running');
    expect((await putPlan(t, runId)).status).toBe(409);
    const req = await deliverNext('post_plan');
    expect(req.signatureValid).toBe(true);
    expect(req.body.plan_json_api_url).toBe(`${PUBLIC}/api/v2/runs/${runId}/plan/json-output`);
    expect(Object.keys(req.body).at(-1)).toBe('plan_json_api_url');
    const plan = await fetch(local(req.body.plan_json_api_url), { headers: { Authorization: `Bearer ${req.body.access_token}` } });
    expect(plan.status).toBe(200);
    expect(plan.headers.get('content-type')).toBe('application/json');
    expect(Buffer.from(await plan.arrayBuffer()).equals(PLAN_JSON)).toBe(true);
    expect((await callBack(local(req.body.task_result_callback_url), req.body.access_token, resultBody('passed'))).status).toBe(200);
    expect(await runStatus(t, runId)).toBe('planned');
  });

  it('apply fires pre_apply, then applying; complete-apply fires post_apply, whose failure does not halt', async () => {
    const apply = await t.api('POST', `/api/v2/runs/${runId}/actions/apply`);
    expect(apply.status).toBe(200);
    expect(apply.json.data.attributes.status).toBe('pre_apply_running');
    const pre = await deliverNext('pre_apply');
    expect(pre.body.plan_json_api_url).toBe(`${PUBLIC}/api/v2/runs/${runId}/plan/json-output`);
    expect((await t.api('POST', `/api/v2/runs/${runId}/actions/complete-apply`, { body: { status: 'applied' } })).status).toBe(409);
    await callBack(local(pre.body.task_result_callback_url), pre.body.access_token, resultBody('passed'));
    expect(await runStatus(t, runId)).toBe('applying');
    const bad = await t.api('POST', `/api/v2/runs/${runId}/actions/complete-apply`, { body: { status: 'done' } });
    expect(bad.status).toBe(422);
    const done = await t.api('POST', `/api/v2/runs/${runId}/actions/complete-apply`, { body: { status: 'applied' } });
    expect(done.status).toBe(200);
    expect(done.json.data.attributes.status).toBe('post_apply_running');
    const post = await deliverNext('post_apply');
    await callBack(local(post.body.task_result_callback_url), post.body.access_token, resultBody('failed', { message: 'cost too high' }));
    const run = await t.api('GET', `/api/v2/runs/${runId}?include=task_stages`);
    expect(run.json.data.attributes.status).toBe('applied');
    // post_apply is advisory whatever the attachment says: its stage passes, the result shows the failure.
    expect(run.json.included.map((s: any) => s.attributes.status)).toEqual(['passed', 'passed', 'passed', 'passed']);
    const postResult = await t.api('GET', `/api/v2/task-results/${post.body.task_result_id}`);
    expect(postResult.json.data.attributes).toMatchObject({ status: 'failed', message: 'cost too high' });
    for (const s of run.json.included) expect(s.attributes['updated-at']).toMatch(RFC3339);
    // Every request was signed with the task's key and carried its own token.
    expect(new Set(payloads.map((p) => p.body.access_token)).size).toBe(4);
  });
});
