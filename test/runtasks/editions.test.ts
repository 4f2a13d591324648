import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Integrator } from '../helpers/integrator.js';
import { createOrg } from '../helpers/organizations.js';
import { attachTask, createRun, createTask, uploadedConfiguration } from '../helpers/runs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

/** TERRACE_EDITION decides every organization's entitlement set, and run tasks obey it. */

let hook: Integrator;
const servers: TestServer[] = [];

beforeAll(async () => {
  hook = await new Integrator('k').start();
});

afterAll(async () => {
  await hook.close();
  for (const t of servers) await t.close();
});

async function server(edition?: string) {
  const t = await startTestServer(edition ? { TERRACE_EDITION: edition } : {});
  servers.push(t);
  await createOrg(t, 'acme');
  return t;
}

const count = async (t: TestServer, table: 'run_tasks' | 'workspace_run_tasks') =>
  Number((await t.running.deps.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

describe('TERRACE_EDITION', () => {
  it('is standard unless set, and names the variable when the value is unknown', () => {
    expect(loadConfig({ TERRACE_DATA_DIR: '/tmp/x' }).edition).toBe('standard');
    expect(() => loadConfig({ TERRACE_DATA_DIR: '/tmp/x', TERRACE_EDITION: 'gold' })).toThrow(/TERRACE_EDITION/);
  });

  it('standard: no run task limits and no global run tasks in the entitlement set', async () => {
    const t = await server();
    const res = await t.api('GET', '/api/v2/organizations/acme/entitlement-set');
    expect(res.status).toBe(200);
    const a = res.json.data.attributes;
    expect(a['run-tasks']).toBe(true);
    expect(a['global-run-tasks']).toBe(false);
    expect(a['run-task-limit']).toBeNull();
    expect(a['run-task-workspace-limit']).toBeNull();
    await createTask(t, 'acme', 'one', hook.url, 'k');
    await createTask(t, 'acme', 'two', hook.url, 'k');
    expect(await count(t, 'run_tasks')).toBe(2);
  });

  it('free: one run task integration, applicable to up to ten workspaces; refusals change nothing', async () => {
    const t = await server('free');
    const ent = await t.api('GET', '/api/v2/organizations/acme?include=entitlement_set');
    const a = ent.json.included[0].attributes;
    expect(a['run-task-limit']).toBe(1);
    expect(a['run-task-workspace-limit']).toBe(10);
    expect(a['global-run-tasks']).toBe(false);

    const task = await createTask(t, 'acme', 'scanner', hook.url, 'k');
    const verifications = hook.received.length;
    const second = await t.api('POST', '/api/v2/organizations/acme/tasks', {
      body: { data: { type: 'tasks', attributes: { name: 'cost', url: hook.url, category: 'task', 'hmac-key': 'k' } } },
    });
    expect(second.status).toBe(422);
    expect(second.json.errors[0].detail).toMatch(/at most 1 run task integration.*delete one first/);
    expect(await count(t, 'run_tasks')).toBe(1);
    // Refused before the integrator was asked to verify anything.
    expect(hook.received.length).toBe(verifications);

    const ws: string[] = [];
    for (let i = 0; i < 11; i++) ws.push((await createWorkspace(t, 'acme', `w${i}`)).id);
    const attached: string[] = [];
    for (let i = 0; i < 10; i++) attached.push((await attachTask(t, ws[i]!, task.id, ['pre_plan'], 'advisory')).id);
    const eleventh = await t.api('POST', `/api/v2/workspaces/${ws[10]}/tasks`, {
      body: { data: { type: 'workspace-tasks', attributes: { 'enforcement-level': 'advisory', stages: ['pre_plan'] }, relationships: { task: { data: { type: 'tasks', id: task.id } } } } },
    });
    expect(eleventh.status).toBe(422);
    expect(eleventh.json.errors[0].detail).toMatch(/at most 10 workspaces/);
    expect(await count(t, 'workspace_run_tasks')).toBe(10);
    expect((await t.api('GET', `/api/v2/workspaces/${ws[10]}/tasks`)).json.data).toEqual([]);

    // Freeing one workspace makes room for another.
    expect((await t.api('DELETE', `/api/v2/workspaces/${ws[0]}/tasks/${attached[0]}`)).status).toBe(204);
    await attachTask(t, ws[10]!, task.id, ['pre_plan'], 'advisory');
    expect(await count(t, 'workspace_run_tasks')).toBe(10);
  });

  it('premium: global run tasks apply to every workspace that has not attached them', async () => {
    const t = await server('premium');
    expect((await t.api('GET', '/api/v2/organizations/acme/entitlement-set')).json.data.attributes['global-run-tasks']).toBe(true);
    const created = await t.api('POST', '/api/v2/organizations/acme/tasks', {
      body: {
        data: {
          type: 'tasks',
          attributes: { name: 'policy', url: hook.url, category: 'task', 'hmac-key': 'k', 'global-configuration': { enabled: true, stages: ['post_plan'], 'enforcement-level': 'mandatory' } },
        },
      },
    });
    expect(created.status).toBe(201);
    expect(created.json.data.attributes['global-configuration']).toEqual({ enabled: true, stages: ['post_plan'], 'enforcement-level': 'mandatory' });

    const ws = (await createWorkspace(t, 'acme', 'app')).id;
    const run = await createRun(t, ws, await uploadedConfiguration(t, ws));
    expect(run.status).toBe(201);
    const stages = run.json.included.filter((x: any) => x.type === 'task-stages');
    const postPlan = stages.find((s: any) => s.attributes.stage === 'post_plan');
    expect(postPlan).toBeDefined();
    const results = await t.api('GET', `/api/v2/task-stages/${postPlan.id}?include=task_results`);
    const names = results.json.included.filter((x: any) => x.type === 'task-results').map((r: any) => [r.attributes['task-name'], r.attributes['workspace-task-enforcement-level']]);
    expect(names).toEqual([['policy', 'mandatory']]);
  });
});
