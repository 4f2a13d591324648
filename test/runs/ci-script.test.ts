import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Integrator, callBack, resultBody } from '../helpers/integrator.js';
import { createOrg } from '../helpers/organizations.js';
import { attachTask, createTask } from '../helpers/runs.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

/** The README's CI script, run as written with real Terraform (which CI lacks: skipped there). */
const README = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'README.md');
const have = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const runnable = have('terraform') && have('jq') && have('curl');

function readmeScript(): string {
  const text = fs.readFileSync(README, 'utf8');
  const start = text.indexOf('**A CI job that gates apply on the tasks**');
  const m = /```sh\n([\s\S]*?)```/.exec(text.slice(start));
  if (start < 0 || !m) throw new Error('the CI script is missing from the README');
  return m[1]!;
}

let t: TestServer;
let hook: Integrator;
const dirs: string[] = [];

beforeAll(async () => {
  if (!runnable) return;
  t = await startTestServer();
  hook = await new Integrator('ci-key').start();
});

afterAll(async () => {
  if (!runnable) return;
  await hook.close();
  await t.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function setup(verdict: (stage: string) => 'passed' | 'failed') {
  hook.onRequest = (req) => {
    if (req.body?.access_token === 'test-token' || !req.signatureValid) return;
    void callBack(req.body.task_result_callback_url, req.body.access_token, resultBody(verdict(req.body.stage), { message: `checked ${req.body.stage}` }));
  };
  const org = `ci${dirs.length}`;
  await createOrg(t, org);
  const ws = (await createWorkspace(t, org, 'app')).id;
  const task = await createTask(t, org, 'gate', hook.url, 'ci-key');
  await attachTask(t, ws, task.id, ['pre_plan', 'post_plan', 'pre_apply', 'post_apply'], 'mandatory');
  const dir = tempDir('terrace-ci-');
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, 'main.tf'), 'output "hello" {\n  value = "world"\n}\n');
  fs.writeFileSync(path.join(dir, 'ci.sh'), readmeScript());
  return { ws, dir };
}

/** Runs the script without blocking this process (the server under test answers it). */
function runScript(dir: string, ws: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['ci.sh'], {
      cwd: dir,
      env: { ...process.env, TERRACE_API: `${t.url}/api/v2`, TERRACE_WORKSPACE: ws, TERRACE_TOKEN: t.adminToken, POLL_SECONDS: '1', TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

describe.skipIf(!runnable)('the README CI script', () => {
  it('plans, waits for the tasks at every stage, applies, and reports the apply', async () => {
    const { ws, dir } = await setup(() => 'passed');
    const r = await runScript(dir, ws);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(fs.existsSync(path.join(dir, 'terraform.tfstate'))).toBe(true);
    const runs = await t.api('GET', `/api/v2/workspaces/${ws}/runs`);
    const run = runs.json.data[0];
    const stages = await t.api('GET', `/api/v2/runs/${run.id}/task-stages`);
    expect(stages.json.data.map((s: any) => s.attributes.stage)).toEqual(['pre_plan', 'post_plan', 'pre_apply', 'post_apply']);
    const plan = await t.api('GET', `/api/v2/runs/${run.id}/plan/json-output`);
    expect(JSON.parse(plan.text).format_version).toBeDefined();
    // post_apply's callback may land just after the script ends.
    for (let i = 0; i < 100 && (await t.api('GET', `/api/v2/runs/${run.id}`)).json.data.attributes.status !== 'applied'; i++) await new Promise((res) => setTimeout(res, 50));
    expect((await t.api('GET', `/api/v2/runs/${run.id}`)).json.data.attributes.status).toBe('applied');
  }, 240_000);

  it('stops before applying when a mandatory post_plan task fails', async () => {
    const { ws, dir } = await setup((stage) => (stage === 'post_plan' ? 'failed' : 'passed'));
    const r = await runScript(dir, ws);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('post_plan tasks stopped the run');
    expect(fs.existsSync(path.join(dir, 'terraform.tfstate'))).toBe(false);
    const run = (await t.api('GET', `/api/v2/workspaces/${ws}/runs`)).json.data[0];
    expect(run.attributes.status).toBe('errored');
  }, 240_000);
});
