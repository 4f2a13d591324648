import { rfc3339 } from '../clock.js';
import { afterCommit, type Tx } from '../db/index.js';
import type { Deps } from '../deps.js';
import { conflict } from '../http/errors.js';
import { generateTaskAccessToken, hashToken } from '../identity/tokens.js';
import { enqueue } from '../jobs/runner.js';
import type { Stage } from '../runtasks/settings.js';
import { next, stageOf, timestampKey, type RunEvent, type RunStatus } from './state-machine.js';
import { getRun, moveRun, type RunRow } from './store.js';
import { FINAL_RESULT_STATUSES, getStage, resultsOfStages, stagesOfRun, updateResultIf, updateStage, type TaskResultRow } from './task-store.js';

/** The job that sends one task result's request to its integrator (see delivery.ts). */
export const DELIVER_TASK_REQUEST = 'runtasks.deliver';

export function withTimestamp(json: string, key: string, at: string): string {
  let v: Record<string, string> = {};
  try {
    v = JSON.parse(json) as Record<string, string>;
  } catch {
    // A corrupt column starts afresh.
  }
  return JSON.stringify({ ...v, [key]: at });
}

const isFinal = (status: string) => (FINAL_RESULT_STATUSES as readonly string[]).includes(status);

/** A result that stops its run: a mandatory one that failed, errored or could not be reached. */
function halts(r: TaskResultRow): boolean {
  return r.enforcement_level === 'mandatory' && r.stage !== 'post_apply' && ['failed', 'errored', 'unreachable'].includes(r.status);
}

/**
 * Moves a run on event, by the transition table, and starts the task stage the new status waits
 * on. Runs inside the caller's transaction; a status that changed meanwhile is a 409.
 */
export async function fire(tx: Tx, deps: Deps, run: RunRow, event: RunEvent, extra: Partial<Pick<RunRow, 'plan_json_blob_key' | 'error_message'>> = {}): Promise<RunRow> {
  const stages = await stagesOfRun(tx, run.id);
  const facts = { hasStage: (s: Stage) => stages.some((x) => x.stage === s), planOnly: run.plan_only === 1 };
  const from = run.status as RunStatus;
  const to = next(from, event, facts);
  if (to === null) throw conflict(`the run is ${from.replace(/_/g, ' ')}: it cannot ${event.replace(/_/g, ' ')} now`);
  const now = rfc3339(deps.clock.now());
  let ts = run.status_timestamps;
  const waited = stageOf(from);
  if (waited && (event === 'stage_passed' || event === 'stage_failed')) ts = withTimestamp(ts, timestampKey(`${waited}_completed`), now);
  ts = withTimestamp(ts, timestampKey(to), now);
  if (!(await moveRun(tx, run.id, from, { status: to, status_timestamps: ts, updated_at: now, ...extra }))) {
    throw conflict('the run changed while this request was handled; read it again and retry');
  }
  const stage = stageOf(to);
  if (stage) await startStage(tx, deps, run.id, stage);
  if (to === 'canceled') await cancelOpenTasks(tx, deps, run.id);
  // Once per change: PostgreSQL may run this transaction again after a serialization failure.
  afterCommit(tx, () => deps.logger.info({ run: run.id, from, to, event }, 'run moved'));
  return (await getRun(tx, run.id))!;
}

/**
 * Sends a stage's requests: each result gets its access token (hash for checking, a sealed copy
 * so a retry sends identical bytes) and a delivery job, in this transaction: the outbox.
 */
export async function startStage(tx: Tx, deps: Deps, runId: string, stage: Stage): Promise<void> {
  const row = (await stagesOfRun(tx, runId)).find((s) => s.stage === stage);
  if (!row) return;
  const nowDate = deps.clock.now();
  const now = rfc3339(nowDate);
  await updateStage(tx, row.id, { status: 'running', status_timestamps: withTimestamp(row.status_timestamps, 'running-at', now), updated_at: now });
  for (const r of await resultsOfStages(tx, [row.id])) {
    if (r.status !== 'pending' || r.delivery_state !== 'none') continue;
    const token = generateTaskAccessToken();
    await tx
      .updateTable('task_results')
      .set({ delivery_state: 'queued', access_token_hash: hashToken(token), access_token_sealed: deps.secrets.encrypt(token), updated_at: now })
      .where('id', '=', r.id)
      .execute();
    await enqueue(tx, DELIVER_TASK_REQUEST, { taskResultId: r.id }, nowDate);
  }
}

/**
 * Rolls a stage's results up once all are final: failed when a mandatory result (outside
 * post_apply) failed, errored or was unreachable; passed otherwise, advisory failures included
 * (Terraform CLI fails a run on a failed stage). Then the run moves on if it waits on the stage.
 */
export async function settleStage(tx: Tx, deps: Deps, stageId: string): Promise<void> {
  const stage = await getStage(tx, stageId);
  if (!stage || stage.status !== 'running') return;
  const results = await resultsOfStages(tx, [stageId]);
  if (results.some((r) => !isFinal(r.status))) return;
  const status = results.some(halts) ? 'failed' : 'passed';
  const now = rfc3339(deps.clock.now());
  await updateStage(tx, stageId, { status, status_timestamps: withTimestamp(stage.status_timestamps, `${status}-at`, now), updated_at: now });
  const run = await getRun(tx, stage.run_id);
  if (run && stageOf(run.status as RunStatus) === stage.stage) {
    await fire(tx, deps, run, status === 'passed' ? 'stage_passed' : 'stage_failed', status === 'failed' ? { error_message: `a mandatory run task failed in ${stage.stage}` } : {});
  }
}

/** Ends a result (errored, unreachable, …) unless it is final already, and settles its stage. */
export async function endResult(tx: Tx, deps: Deps, r: TaskResultRow, status: 'errored' | 'unreachable', message: string): Promise<boolean> {
  const now = rfc3339(deps.clock.now());
  const ok = await updateResultIf(tx, r.id, ['pending', 'running'], {
    status,
    message,
    final_at: now,
    updated_at: now,
    status_timestamps: withTimestamp(r.status_timestamps, `${status}-at`, now),
  });
  if (ok) await settleStage(tx, deps, r.task_stage_id);
  return ok;
}

async function cancelOpenTasks(tx: Tx, deps: Deps, runId: string): Promise<void> {
  const now = rfc3339(deps.clock.now());
  const stages = await stagesOfRun(tx, runId);
  for (const r of await resultsOfStages(tx, stages.map((s) => s.id))) {
    if (isFinal(r.status)) continue;
    await updateResultIf(tx, r.id, ['pending', 'running'], { status: 'canceled', final_at: now, updated_at: now, status_timestamps: withTimestamp(r.status_timestamps, 'canceled-at', now) });
  }
  for (const s of stages) {
    if (s.status === 'pending' || s.status === 'running') {
      await updateStage(tx, s.id, { status: 'canceled', status_timestamps: withTimestamp(s.status_timestamps, 'canceled-at', now), updated_at: now });
    }
  }
}
