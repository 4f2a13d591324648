import type { Deps } from '../deps.js';
import { notFound, quoteValue } from '../http/errors.js';
import type { Principal } from '../identity/principal.js';
import { workspaceByName, type WorkspaceContext } from '../workspaces/service.js';
import { readableRun } from './access.js';
import { LIMITS } from './callbacks.js';
import { listRuns, type RunRow } from './store.js';
import { listOutcomes, resultsOfStages, stagesOfRun, type OutcomeRow, type TaskResultRow, type TaskStageRow } from './task-store.js';

/**
 * What the web UI reads of runs and their task results: the same checks as the API (a run is
 * readable by whoever may read its workspace; anything else is 404), as whole views.
 */

/** The runs of a workspace named by organization and name, newest first. */
export async function workspaceRuns(deps: Deps, p: Principal, orgName: string, wsName: string, page: { limit: number; offset: number }) {
  const ctx = await workspaceByName(deps, p, orgName, wsName);
  const { rows, total } = await listRuns(deps.db, ctx.ws.id, page);
  return { ...ctx, runs: rows, total };
}

export interface ResultView {
  result: TaskResultRow;
  outcomes: OutcomeRow[];
}

export interface RunView extends WorkspaceContext {
  run: RunRow;
  stages: { stage: TaskStageRow; results: ResultView[] }[];
}

/**
 * A run of the workspace named by organization and name, with its task stages, their results and
 * each result's outcomes (at most the 100 a callback may carry). A run of another workspace is as
 * missing as one that does not exist.
 */
export async function runWithTaskResults(deps: Deps, p: Principal, orgName: string, wsName: string, runId: string): Promise<RunView> {
  const ctx = await workspaceByName(deps, p, orgName, wsName);
  const missing = () => notFound(`run ${quoteValue(runId)} not found in workspace ${quoteValue(`${ctx.org.name}/${ctx.ws.name}`)}, or you are not authorized to see it`);
  const { run } = await readableRun(deps, { principal: p, taskToken: null }, runId).catch(() => {
    throw missing();
  });
  if (run.workspace_id !== ctx.ws.id) throw missing();
  const stages = await stagesOfRun(deps.db, run.id);
  const results = await resultsOfStages(deps.db, stages.map((s) => s.id));
  const views: ResultView[] = [];
  for (const result of results) views.push({ result, outcomes: (await listOutcomes(deps.db, result.id, { limit: LIMITS.outcomes, offset: 0 })).rows });
  return {
    ...ctx,
    run,
    stages: stages.map((stage) => ({ stage, results: views.filter((v) => v.result.task_stage_id === stage.id) })),
  };
}
