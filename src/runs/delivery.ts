import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { enqueue, type JobKind } from '../jobs/runner.js';
import { getOrganizationById } from '../organizations/store.js';
import { sendTaskRequest } from '../runtasks/outbound.js';
import { getRunTask, hmacKeyOf } from '../runtasks/store.js';
import { getWorkspaceById } from '../workspaces/store.js';
import { DELIVER_TASK_REQUEST, endResult } from './progress.js';
import { getConfigurationVersion, getRun } from './store.js';
import { getResult, markDelivered, type TaskResultRow } from './task-store.js';

/** The seed's limit: a result without a final callback this long after its request is errored. */
export const CALLBACK_DEADLINE_MS = 10 * 60_000;
export const RUN_TASK_DEADLINE = 'runtasks.deadline';

/**
 * The seed's run task request payload, every field in the seed's order with its JSON type;
 * absolute URLs from TERRACE_PUBLIC_URL. null where the seed says "Null when …".
 */
export async function taskPayload(deps: Deps, r: TaskResultRow, accessToken: string): Promise<Record<string, unknown> | null> {
  const run = await getRun(deps.db, r.run_id);
  const ws = run ? await getWorkspaceById(deps.db, run.workspace_id) : undefined;
  const org = ws ? await getOrganizationById(deps.db, ws.organization_id) : undefined;
  if (!run || !ws || !org) return null;
  const cv = await getConfigurationVersion(deps.db, run.configuration_version_id);
  const base = deps.config.publicUrl;
  const vcs = JSON.parse(run.vcs) as Record<string, string | null>;
  const payload: Record<string, unknown> = {
    payload_version: 1,
    stage: r.stage,
    access_token: accessToken,
    capabilities: { outcomes: true },
    configuration_version_download_url: cv?.status === 'uploaded' ? `${base}/api/v2/configuration-versions/${cv.id}/download` : null,
    configuration_version_id: run.configuration_version_id,
    is_speculative: run.plan_only === 1,
    organization_name: org.name,
    run_app_url: `${base}/app/${org.name}/workspaces/${ws.name}/runs/${run.id}`,
    run_created_at: run.created_at,
    run_created_by: run.created_by,
    run_id: run.id,
    run_message: run.message,
    task_result_callback_url: `${base}/api/v2/task-results/${r.id}/callback`,
    task_result_enforcement_level: r.enforcement_level,
    task_result_id: r.id,
    vcs_branch: vcs.branch ?? null,
    vcs_commit_url: vcs['commit-url'] ?? null,
    vcs_pull_request_url: vcs['pull-request-url'] ?? null,
    vcs_repo_url: vcs['repo-url'] ?? null,
    workspace_app_url: `${base}/app/${org.name}/workspaces/${ws.name}`,
    workspace_id: ws.id,
    workspace_name: ws.name,
    workspace_working_directory: ws.working_directory,
  };
  if (r.stage !== 'pre_plan') payload.plan_json_api_url = `${base}/api/v2/runs/${run.id}/plan/json-output`;
  return payload;
}

/** The task result a delivery or deadline job is about (its payload is {taskResultId}). */
async function resultOfJob(deps: Deps, payload: unknown): Promise<TaskResultRow | undefined> {
  const id = (payload as { taskResultId?: unknown } | null)?.taskResultId;
  return typeof id === 'string' ? getResult(deps.db, id) : undefined;
}

/**
 * Sends one queued result's request. Only 200 counts: anything else throws, and the job runner
 * retries with its backoff (8 attempts in all, 1 s, 2 s, 4 s … apart). On 200 the result is
 * marked sent, with its callback deadline, in one statement that only a still-queued result
 * passes: a second sender finds it sent and does nothing.
 *
 * The one window left: the integrator got the request and answered 200, but this process died
 * before recording it. The job's lease then runs out and another attempt sends the same bytes
 * again (same task_result_id, same access token, same signature): integrators treat a request
 * for a task_result_id they have seen as the same request. Delivery is at-least-once on the
 * wire and exactly-once in the store.
 */
async function deliver(deps: Deps, payload: unknown): Promise<void> {
  const r = await resultOfJob(deps, payload);
  if (!r || r.delivery_state !== 'queued' || r.status !== 'pending' || !r.access_token_sealed) return;
  const task = await getRunTask(deps.db, r.task_id);
  const body = await taskPayload(deps, r, deps.secrets.decrypt(r.access_token_sealed));
  if (!body || !task) {
    await inTransaction(deps.db, (tx) => endResult(tx, deps, r, 'errored', 'the run task or its run no longer exists'));
    return;
  }
  const sent = await sendTaskRequest(r.task_url, body, hmacKeyOf(deps.secrets, task), { timeoutMs: deps.config.runTaskRequestTimeoutMs, publicUrl: deps.config.publicUrl });
  if (!sent.ok) throw new Error(`the integrator answered ${sent.outcome}, not 200`);
  const now = deps.clock.now();
  const deadline = new Date(now.getTime() + CALLBACK_DEADLINE_MS);
  await inTransaction(deps.db, async (tx) => {
    if (await markDelivered(tx, r.id, { requested_at: rfc3339(now), callback_deadline: rfc3339(deadline), updated_at: rfc3339(now) })) {
      await enqueue(tx, RUN_TASK_DEADLINE, { taskResultId: r.id }, deadline, now);
    }
  });
}

/** Retries used up: the result is unreachable (a failure for the stage's rules), once. */
async function deliveryFailed(deps: Deps, payload: unknown, _job: unknown, lastError: string): Promise<void> {
  const r = await resultOfJob(deps, payload);
  if (!r || r.delivery_state !== 'queued') return;
  await inTransaction(deps.db, async (tx) => {
    await tx.updateTable('task_results').set({ delivery_state: 'failed' }).where('id', '=', r.id).where('delivery_state', '=', 'queued').execute();
    await endResult(tx, deps, r, 'unreachable', `the integrator could not be reached: ${lastError}`.slice(0, 1000));
  });
}

/**
 * The deadline, enforced from rows: a job row written with the sent mark, due at the stored
 * deadline, claimed under a lease by whichever process runs jobs (so a restart changes nothing).
 * It compares the result's stored deadline with the injected clock and errors a result still
 * open then; its update passes only an open result, so a final callback racing it wins or
 * loses cleanly, once.
 */
async function enforceDeadline(deps: Deps, payload: unknown): Promise<void> {
  const r = await resultOfJob(deps, payload);
  if (!r || !r.callback_deadline || !['pending', 'running'].includes(r.status)) return;
  const now = deps.clock.now();
  if (new Date(r.callback_deadline).getTime() > now.getTime()) {
    // Claimed early (clocks disagree): come back at the stored deadline.
    await enqueue(deps.db, RUN_TASK_DEADLINE, { taskResultId: r.id }, new Date(r.callback_deadline), now);
    return;
  }
  await inTransaction(deps.db, (tx) => endResult(tx, deps, r, 'errored', 'no final callback within 10 minutes of the request'));
}

export const deliveryJobHandlers: Record<string, JobKind> = {
  [DELIVER_TASK_REQUEST]: { run: deliver, failed: deliveryFailed },
  [RUN_TASK_DEADLINE]: { run: enforceDeadline },
};
