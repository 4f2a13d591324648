import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unauthorized } from '../http/errors.js';
import type { Principal } from '../identity/principal.js';
import { hashToken, sameHash } from '../identity/tokens.js';
import { workspaceById, type WorkspaceContext } from '../workspaces/service.js';
import { getRun, type RunRow } from './store.js';
import { getResult, type TaskResultRow } from './task-store.js';

/** How long a task result's access token keeps working after the result became final. */
export const ACCESS_TOKEN_GRACE_MS = 60_000;

/** Who is asking: an API principal, or an integrator holding a run task access token. */
export interface Caller {
  principal: Principal | null;
  taskToken: string | null;
}

const hiddenRun = (id: string) => notFound(`run ${quoteValue(id)} not found, or you are not authorized to see it`);

/**
 * The task result an access token was issued for, if the token is valid now: it matches the
 * result's stored hash and the result is not final, or became final less than the grace ago.
 */
export async function resultForToken(deps: Deps, token: string, resultId?: string): Promise<TaskResultRow | undefined> {
  const hash = hashToken(token);
  const row = resultId
    ? await getResult(deps.db, resultId)
    : await deps.db.selectFrom('task_results').selectAll().where('access_token_hash', '=', hash).executeTakeFirst();
  if (!row || !row.access_token_hash || !sameHash(row.access_token_hash, hash)) return undefined;
  if (row.final_at && deps.clock.now().getTime() > new Date(row.final_at).getTime() + ACCESS_TOKEN_GRACE_MS) return undefined;
  return row;
}

export interface RunContext extends Partial<WorkspaceContext> {
  run: RunRow;
  /** Set when an integrator's access token opened the run (it may only read). */
  viaTaskToken: boolean;
}

/** A run the caller may read: by a principal that sees its workspace, or by a task token of that run. */
export async function readableRun(deps: Deps, caller: Caller, runId: string): Promise<RunContext> {
  if (caller.taskToken) {
    const result = await resultForToken(deps, caller.taskToken);
    if (!result) throw unauthorized('the run task access token is invalid or no longer valid');
    const run = result.run_id === runId ? await getRun(deps.db, runId) : undefined;
    if (!run) throw hiddenRun(runId);
    return { run, viaTaskToken: true };
  }
  if (!caller.principal) throw unauthorized();
  const run = await getRun(deps.db, runId);
  if (!run) throw hiddenRun(runId);
  const ctx = await workspaceById(deps, caller.principal, run.workspace_id).catch(() => {
    throw hiddenRun(runId);
  });
  return { run, viaTaskToken: false, ...ctx };
}

/** A run the caller may act on (apply, discard, cancel, hand over plan JSON): workspace managers. */
export async function runForUpdate(deps: Deps, p: Principal, runId: string): Promise<RunContext & WorkspaceContext> {
  const ctx = await readableRun(deps, { principal: p, taskToken: null }, runId);
  authorize(ctx.access!.manage, () => hiddenRun(runId));
  return ctx as RunContext & WorkspaceContext;
}

/** Reads of a run's bytes (configuration, plan JSON) by a principal: workspace managers only. */
export async function runBytesReadable(deps: Deps, caller: Caller, runId: string): Promise<RunContext> {
  const ctx = await readableRun(deps, caller, runId);
  if (!ctx.viaTaskToken && !ctx.access!.readStateVersions) throw hiddenRun(runId);
  return ctx;
}
