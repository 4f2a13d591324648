import type { Readable } from 'node:stream';
import { z } from 'zod';
import { planJsonKey } from '../blobs/layout.js';
import { BlobTooLargeError } from '../blobs/types.js';
import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { clientClosedBody } from '../http/body.js';
import { ApiError, conflict, payloadTooLarge, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { newId } from '../ids.js';
import { wakeJobs } from '../jobs/runner.js';
import { runTaskEntitlements } from '../runtasks/service.js';
import { parseGlobal, parseStages, STAGES, type EnforcementLevel, type Stage } from '../runtasks/settings.js';
import { enabledAttachments, globalRunTasks } from '../runtasks/store.js';
import { taskUrlProblem } from '../runtasks/outbound.js';
import type { WorkspaceContext } from '../workspaces/service.js';
import { fire, startStage } from './progress.js';
import { initialStatus, stageOf, timestampKey } from './state-machine.js';
import { getConfigurationVersion, getRun, insertRun, type RunRow } from './store.js';
import { insertResult, insertStage } from './task-store.js';

const vcsUrl = z
  .string({ error: 'must be a string or null' })
  .refine((u) => taskUrlProblem(u) === null, { error: 'must be an absolute http or https URL without credentials' })
  .nullable()
  .optional();
export const createRunSchema = z.object({
  message: z.string({ error: 'must be a string' }).max(4000, { error: 'must be at most 4000 characters' }).optional(),
  'is-destroy': z.boolean({ error: 'must be true or false' }).optional(),
  'plan-only': z.boolean({ error: 'must be true or false' }).optional(),
  speculative: z.boolean({ error: 'must be true or false' }).optional(),
  // Terrace's own: what the run was triggered from, for the task payload's vcs_* fields.
  'vcs-branch': z.string({ error: 'must be a string or null' }).max(255, { error: 'must be at most 255 characters' }).nullable().optional(),
  'vcs-commit-url': vcsUrl,
  'vcs-pull-request-url': vcsUrl,
  'vcs-repo-url': vcsUrl,
});
export type RunInput = z.output<typeof createRunSchema>;

/** The executor's report of the apply's end: plain JSON or a JSON:API document. */
export const completeApplySchema = z.discriminatedUnion(
  'status',
  [
    z.object({ status: z.literal('applied') }),
    z.object({ status: z.literal('errored'), message: z.string({ error: 'must be a string' }).max(4000, { error: 'must be at most 4000 characters' }).optional() }),
  ],
  { error: 'status must be "applied" or "errored"' },
);

interface Applicable {
  taskId: string;
  taskName: string;
  taskUrl: string;
  workspaceTaskId: string;
  enforcement: EnforcementLevel;
}

/** Per stage, the enabled tasks that apply to the workspace: attached ones, then global ones not attached. */
async function applicableTasks(deps: Deps, ctx: WorkspaceContext): Promise<Map<Stage, Applicable[]>> {
  const out = new Map<Stage, Applicable[]>(STAGES.map((s) => [s, []]));
  const attached = await enabledAttachments(deps.db, ctx.ws.id);
  for (const a of attached) {
    for (const s of parseStages(a.stages)) {
      out.get(s)!.push({ taskId: a.task_id, taskName: a.task_name, taskUrl: a.task_url, workspaceTaskId: a.workspace_task_id, enforcement: a.enforcement_level });
    }
  }
  if (runTaskEntitlements(deps, ctx.org).global) {
    for (const t of await globalRunTasks(deps.db, ctx.org.id)) {
      const g = parseGlobal(t.global_configuration);
      if (!g?.enabled || t.enabled !== 1 || attached.some((a) => a.task_id === t.id)) continue;
      for (const s of g.stages) out.get(s)!.push({ taskId: t.id, taskName: t.name, taskUrl: t.url, workspaceTaskId: t.id, enforcement: g['enforcement-level'] });
    }
  }
  return out;
}

function principalName(p: Principal): string {
  return p.kind === 'user' ? p.user.username : principalLabel(p);
}

/**
 * Creates a run and, in the same transaction, every task stage it will pass through with one
 * result per applicable task (Terraform CLI reads them once, right after creating the run), and
 * starts pre_plan if it has tasks.
 */
export async function createRun(deps: Deps, p: Principal, ctx: WorkspaceContext, input: RunInput, cvId: string | undefined): Promise<RunRow> {
  const cv = cvId ? await getConfigurationVersion(deps.db, cvId) : undefined;
  if (cvId && (!cv || cv.workspace_id !== ctx.ws.id)) {
    throw unprocessable(`configuration version ${quoteValue(cvId)} does not exist in workspace ${quoteValue(ctx.ws.id)}`, '/data/relationships/configuration-version/data/id');
  }
  if (!cv) throw unprocessable('relationships.configuration-version is required: create a configuration version and upload the configuration first', '/data/relationships/configuration-version');
  if (cv.status !== 'uploaded') {
    throw unprocessable(`configuration version ${quoteValue(cv.id)} is ${cv.status}: PUT the configuration to its upload-url first`, '/data/relationships/configuration-version/data/id');
  }
  const tasks = await applicableTasks(deps, ctx);
  const planOnly = input['plan-only'] === true || input.speculative === true || cv.speculative === 1;
  const nowDate = deps.clock.now();
  const now = rfc3339(nowDate);
  const stages = STAGES.filter((s) => tasks.get(s)!.length > 0);
  const facts = { hasStage: (s: Stage) => stages.includes(s), planOnly };
  const status = initialStatus(facts);
  const run: RunRow = {
    id: newId('run'),
    workspace_id: ctx.ws.id,
    configuration_version_id: cv.id,
    status,
    status_timestamps: JSON.stringify({ [timestampKey(status)]: now }),
    message: input.message ?? 'Queued manually via the Terrace API',
    is_destroy: input['is-destroy'] ? 1 : 0,
    plan_only: planOnly ? 1 : 0,
    created_by: principalName(p),
    vcs: JSON.stringify({
      branch: input['vcs-branch'] ?? null,
      'commit-url': input['vcs-commit-url'] ?? null,
      'pull-request-url': input['vcs-pull-request-url'] ?? null,
      'repo-url': input['vcs-repo-url'] ?? null,
    }),
    plan_json_blob_key: null,
    error_message: null,
    created_at: now,
    updated_at: now,
  };
  await inTransaction(deps.db, async (tx) => {
    await insertRun(tx, run);
    for (const stage of stages) {
      const stageId = newId('ts');
      await insertStage(tx, { id: stageId, run_id: run.id, stage, status: 'pending', status_timestamps: '{}', created_at: now, updated_at: now });
      for (const a of tasks.get(stage)!) {
        await insertResult(tx, {
          id: newId('taskrs'),
          task_stage_id: stageId,
          run_id: run.id,
          stage,
          task_id: a.taskId,
          task_name: a.taskName,
          task_url: a.taskUrl,
          workspace_task_id: a.workspaceTaskId,
          enforcement_level: a.enforcement,
          status: 'pending',
          message: null,
          url: null,
          status_timestamps: '{}',
          delivery_state: 'none',
          access_token_hash: null,
          access_token_sealed: null,
          requested_at: null,
          callback_deadline: null,
          final_at: null,
          created_at: now,
          updated_at: now,
        });
      }
    }
    const stage = stageOf(status);
    if (stage) await startStage(tx, deps, run.id, stage);
  });
  wakeJobs(deps.db);
  deps.logger.info({ by: principalLabel(p), run: run.id, workspace: ctx.ws.id, stages }, 'run created');
  return (await getRun(deps.db, run.id))!;
}

/** apply, discard, cancel: by the transition table; anything else in the run's status is a 409. */
export async function runAction(deps: Deps, p: Principal, run: RunRow, event: 'apply' | 'discard' | 'cancel'): Promise<RunRow> {
  if (event === 'apply' && run.plan_only === 1) throw conflict('this is a plan-only (speculative) run: it cannot be applied');
  const moved = await inTransaction(deps.db, (tx) => fire(tx, deps, run, event));
  wakeJobs(deps.db);
  deps.logger.info({ by: principalLabel(p), run: run.id, action: event }, 'run action');
  return moved;
}

/**
 * The executor hands over the plan's JSON (`terraform show -json`): streamed into the blob store
 * (size-limited), then planning ends in one transaction that also starts post_plan. Only a run
 * that is planning takes one; the blob is removed again if the run moved meanwhile.
 */
export async function receivePlanJson(deps: Deps, p: Principal, ctx: WorkspaceContext & { run: RunRow }, body: Readable, declared: number | null): Promise<RunRow> {
  const { run } = ctx;
  if (run.status !== 'planning') {
    body.resume();
    throw conflict(`the run is ${run.status.replace(/_/g, ' ')}: plan JSON is accepted only while it is planning`);
  }
  const max = deps.config.maxPlanJsonBytes;
  if (declared !== null && declared > max) {
    body.resume();
    throw payloadTooLarge(`the plan JSON is ${declared} bytes, over the limit of ${max} bytes (TERRACE_MAX_PLAN_JSON_BYTES)`);
  }
  const key = planJsonKey(ctx.org.id, ctx.ws.id, run.id);
  try {
    await deps.blobs.put(key, body, { maxBytes: max, contentType: 'application/json' });
  } catch (err) {
    if (err instanceof BlobTooLargeError) throw payloadTooLarge(`the plan JSON is over the limit of ${max} bytes (TERRACE_MAX_PLAN_JSON_BYTES)`);
    if (!clientClosedBody(body, err)) deps.logger.warn({ err, key }, 'plan JSON upload interrupted');
    throw new ApiError(400, 'upload interrupted', 'the upload did not complete; retry the PUT');
  }
  try {
    const moved = await inTransaction(deps.db, async (tx) => fire(tx, deps, (await getRun(tx, run.id))!, 'plan_uploaded', { plan_json_blob_key: key }));
    wakeJobs(deps.db);
    deps.logger.info({ by: principalLabel(p), run: run.id }, 'plan JSON received');
    return moved;
  } catch (err) {
    await deps.blobs.delete(key).catch(() => undefined);
    throw err;
  }
}

/** The executor reports the apply's end: applied (post_apply fires) or errored. */
export async function completeApply(deps: Deps, p: Principal, run: RunRow, report: z.output<typeof completeApplySchema>): Promise<RunRow> {
  const moved = await inTransaction(deps.db, (tx) =>
    report.status === 'applied'
      ? fire(tx, deps, run, 'apply_succeeded')
      : fire(tx, deps, run, 'apply_failed', { error_message: report.message ?? 'the apply errored' }),
  );
  wakeJobs(deps.db);
  deps.logger.info({ by: principalLabel(p), run: run.id, status: report.status }, 'apply completed');
  return moved;
}
