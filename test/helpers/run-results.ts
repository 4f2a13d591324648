import { HOSTILE_README } from '../fixtures/modules.js';
import { Integrator, callBack, resultBody } from './integrator.js';
import { attachTask, createRun, createTask, uploadedConfiguration } from './runs.js';
import type { TestServer } from './server.js';

/** An outcome body an integrator could send to attack whoever reads it: the hostile README's tricks. */
export const HOSTILE_OUTCOME_BODY = `## Finding details\n\n${HOSTILE_README.replace('readme script', 'outcome script')}\n\nRotate the key, then re-run.`;

/**
 * A run in wsId with two tasks at pre_plan, driven through their real protocol: "scanner"
 * (mandatory) passes with two outcomes (one with the hostile body), "cost" (advisory) fails. The
 * integrator answers every delivery by calling back. Jobs are run by hand (TERRACE_JOBS=false).
 */
export async function runWithTaskResults(t: TestServer, org: string, wsId: string): Promise<{ runId: string; close(): Promise<void> }> {
  const hook = await new Integrator('k3y').start();
  const scanner = await createTask(t, org, 'scanner', hook.url, 'k3y');
  const cost = await createTask(t, org, 'cost', hook.url, 'k3y');
  await attachTask(t, wsId, scanner.id, ['pre_plan'], 'mandatory');
  await attachTask(t, wsId, cost.id, ['pre_plan'], 'advisory');
  const cvId = await uploadedConfiguration(t, wsId);
  const run = await createRun(t, wsId, cvId, { message: 'nightly drift check' });
  if (run.status !== 201) throw new Error(`create run: ${run.status} ${run.text}`);
  await t.running.jobs.runDue();
  const local = (u: string) => u.replace(/^https?:\/\/[^/]+/, t.url);
  for (const req of hook.deliveries()) {
    const b = req.body;
    const byTask = b.task_result_enforcement_level === 'mandatory' ? 'scanner' : 'cost';
    const body =
      byTask === 'scanner'
        ? resultBody('passed', {
            message: '2 findings, none blocking',
            url: 'https://scanner.example/runs/42',
            outcomes: [
              { type: 'task-result-outcomes', attributes: { 'outcome-id': 'CKV-1', description: 'bucket lacks MFA delete', body: HOSTILE_OUTCOME_BODY, url: 'https://scanner.example/CKV-1', tags: { Severity: [{ label: 'High', level: 'error' }] } } },
              { type: 'task-result-outcomes', attributes: { 'outcome-id': 'CKV-2', description: 'log retention below 90 days' } },
            ],
          })
        : resultBody('failed', { message: 'monthly cost +40%' });
    const r = await callBack(local(b.task_result_callback_url), b.access_token, body);
    if (r.status !== 200) throw new Error(`callback: ${r.status} ${r.text}`);
  }
  await t.running.jobs.runDue();
  return { runId: run.json.data.id, close: () => hook.close() };
}
