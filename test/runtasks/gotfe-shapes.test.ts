import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Integrator } from '../helpers/integrator.js';
import { RFC3339, createOrg } from '../helpers/organizations.js';
import { createRun, uploadedConfiguration } from '../helpers/runs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

/**
 * The Debian go-tfe (0.11) predates run tasks, so these are the requests go-tfe 1.x makes
 * (run_task.go, workspace_run_task.go, task_stages.go, task_result.go), sent as it sends them.
 */
let t: TestServer;
let hook: Integrator;
let wsId: string;
let taskId: string;
let wstaskId: string;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  hook = await new Integrator('').start();
  await createOrg(t, 'acme');
  wsId = (await createWorkspace(t, 'acme', 'app')).id;
});

afterAll(async () => {
  await hook.close();
  await t.close();
});

describe('go-tfe 1.x run task calls', () => {
  it('RunTasks.Create: name, url, category, description null; no key means an empty signature header', async () => {
    const res = await t.api('POST', '/api/v2/organizations/acme/tasks', {
      body: { data: { type: 'tasks', attributes: { name: 'gotfe', url: hook.url, category: 'task', description: null } } },
    });
    expect(res.status).toBe(201);
    taskId = res.json.data.id;
    expect(typeof res.json.data.attributes.enabled).toBe('boolean');
    const ping = hook.received.at(-1)!;
    expect(ping.headers['x-tfc-task-signature']).toBe('');
    expect(ping.signatureValid).toBe(true);
  });

  it('WorkspaceRunTasks.Create with a full tasks node and several stages: 201, stage = stages[0]', async () => {
    const res = await t.api('POST', `/api/v2/workspaces/${wsId}/tasks`, {
      body: {
        data: {
          type: 'workspace-tasks',
          attributes: { 'enforcement-level': 'advisory', stages: ['pre_plan', 'post_plan'] },
          relationships: { task: { data: { type: 'tasks', id: taskId, attributes: { name: '', url: '', category: '', enabled: false }, relationships: {} } } },
        },
      },
    });
    expect(res.status).toBe(201);
    wstaskId = res.json.data.id;
    expect(wstaskId).toMatch(/^wstask-/);
    expect(res.json.data.attributes).toMatchObject({ 'enforcement-level': 'advisory', stage: 'pre_plan', stages: ['pre_plan', 'post_plan'] });
    expect(res.json.data.links.self).toBe(`/api/v2/workspaces/${wsId}/tasks/${wstaskId}`);
    const again = await t.api('POST', `/api/v2/workspaces/${wsId}/tasks`, {
      body: { data: { type: 'workspace-tasks', attributes: { 'enforcement-level': 'advisory' }, relationships: { task: { data: { type: 'tasks', id: taskId } } } } },
    });
    expect(again.status).toBe(422);
    const empty = await t.api('POST', `/api/v2/workspaces/${wsId}/tasks`, {
      body: { data: { type: 'workspace-tasks', attributes: { 'enforcement-level': '' }, relationships: { task: { data: { type: 'tasks', id: taskId } } } } },
    });
    expect(empty.status).toBe(422);
  });

  it('WorkspaceRunTasks.Update with the deprecated stage only; Read and List', async () => {
    const up = await t.api('PATCH', `/api/v2/workspaces/${wsId}/tasks/${wstaskId}`, { body: { data: { type: 'workspace-tasks', attributes: { stage: 'pre_plan' } } } });
    expect(up.status).toBe(200);
    expect(up.json.data.attributes).toMatchObject({ stage: 'pre_plan', stages: ['pre_plan'], 'enforcement-level': 'advisory' });
    const list = await t.api('GET', `/api/v2/workspaces/${wsId}/tasks?page%5Bnumber%5D=1&page%5Bsize%5D=20`);
    expect(list.json.data.map((d: any) => d.id)).toEqual([wstaskId]);
    expect(list.json.meta.pagination['total-count']).toBe(1);
  });

  it('RunTasks.Read with include=workspace_tasks; a task attached to workspaces cannot be deleted', async () => {
    const res = await t.api('GET', `/api/v2/tasks/${taskId}?include=workspace_tasks`);
    expect(res.json.data.relationships['workspace-tasks'].data).toEqual([{ type: 'workspace-tasks', id: wstaskId }]);
    expect(res.json.included[0]).toMatchObject({ id: wstaskId, type: 'workspace-tasks', attributes: { 'enforcement-level': 'advisory' } });
    const rel = await t.api('GET', `/api/v2/tasks/${taskId}/relationships/workspace-tasks`);
    expect(rel.status).toBe(200);
    expect(rel.json.data.map((d: any) => d.id)).toEqual([wstaskId]);
    expect(rel.json.meta.pagination['total-count']).toBe(1);
    const del = await t.api('DELETE', `/api/v2/tasks/${taskId}`);
    expect(del.status).toBe(422);
    expect(del.json.errors[0].detail).toContain(wsId);
  });

  it('Runs.ReadWithOptions(include task_stages), TaskStages.Read(include task_results), TaskResults.Read', async () => {
    const run = (await createRun(t, wsId, await uploadedConfiguration(t, wsId))).json.data;
    const read = await t.api('GET', `/api/v2/runs/${run.id}?include=task_stages,made_up`);
    expect(read.status).toBe(200);
    const stage = read.json.included[0];
    expect(stage).toMatchObject({ type: 'task-stages', attributes: { stage: 'pre_plan', status: 'running' } });
    const ts = await t.api('GET', `/api/v2/task-stages/${stage.id}?include=task_results`);
    expect(ts.status).toBe(200);
    for (const v of Object.values(ts.json.data.attributes.permissions)) expect(typeof v).toBe('boolean');
    expect(ts.json.data.attributes['created-at']).toMatch(RFC3339);
    const result = ts.json.included[0];
    expect(result.type).toBe('task-results');
    expect(result.relationships.task_stage.data).toEqual({ type: 'task-stages', id: stage.id });
    expect(result.relationships['task-stage'].data).toEqual({ type: 'task-stages', id: stage.id });
    expect(result.attributes).toMatchObject({ status: 'pending', 'task-id': taskId, 'task-name': 'gotfe', 'workspace-task-id': wstaskId, 'workspace-task-enforcement-level': 'advisory', 'is-speculative': false });
    expect(result.attributes['created-at']).toMatch(RFC3339);
    const stages = await t.api('GET', `/api/v2/runs/${run.id}/task-stages`);
    expect(stages.json.data.map((s: any) => s.id)).toEqual([stage.id]);
    expect((await t.api('GET', `/api/v2/task-results/${result.id}`)).json.data.id).toBe(result.id);
  });
});
