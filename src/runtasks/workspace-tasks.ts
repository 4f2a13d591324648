import { rfc3339 } from '../clock.js';
import { isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { newId } from '../ids.js';
import { workspaceById, type WorkspaceContext } from '../workspaces/service.js';
import { canManageRunTasks, runTaskEntitlements } from './service.js';
import type { Stage, WorkspaceTaskInput } from './settings.js';
import {
  countWorkspacesWithTasks,
  deleteWorkspaceRunTaskRow,
  getRunTask,
  getWorkspaceRunTask,
  insertWorkspaceRunTask,
  listWorkspaceRunTasks,
  updateWorkspaceRunTaskRow,
  type WorkspaceRunTaskRow,
} from './store.js';

const ATTR = (k: string) => `/data/attributes/${k}`;

/** Workspace managers and whoever manages the organization's run tasks attach tasks to a workspace. */
function mayManage(ctx: WorkspaceContext): boolean {
  return ctx.access.manage || canManageRunTasks(ctx.access.org);
}

/** The workspace named in a path, if the caller may see it (and its attached tasks). */
export async function workspaceForTasks(deps: Deps, p: Principal, workspaceId: string): Promise<WorkspaceContext> {
  return workspaceById(deps, p, workspaceId);
}

/** The workspace named in a path, if the caller may attach tasks to it; 404 otherwise. Call before reading a body. */
export async function workspaceForTaskChanges(deps: Deps, p: Principal, workspaceId: string): Promise<WorkspaceContext> {
  const ctx = await workspaceById(deps, p, workspaceId);
  authorize(mayManage(ctx), () => notFound(`workspace ${quoteValue(workspaceId)} not found, or you may not manage its run tasks`));
  return ctx;
}

export async function workspaceTask(deps: Deps, ctx: WorkspaceContext, id: string): Promise<WorkspaceRunTaskRow> {
  const row = await getWorkspaceRunTask(deps.db, ctx.ws.id, id);
  if (!row) throw notFound(`workspace run task ${quoteValue(id)} not found in workspace ${quoteValue(ctx.ws.id)}`);
  return row;
}

/** stages wins over the deprecated single stage; neither means ["post_plan"] (HCP's default). */
function stagesOf(input: WorkspaceTaskInput): Stage[] | undefined {
  if (input.stages !== undefined) return [...new Set(input.stages)];
  if (input.stage !== undefined) return [input.stage];
  return undefined;
}

export async function attachTask(deps: Deps, p: Principal, ctx: WorkspaceContext, input: WorkspaceTaskInput, taskId: string | undefined): Promise<WorkspaceRunTaskRow> {
  if (!taskId) throw unprocessable('relationships.task.data.id is required: the id of the organization run task (task-…) to attach', '/data/relationships/task');
  if (!input['enforcement-level']) throw unprocessable('enforcement-level is required: "mandatory" or "advisory"', ATTR('enforcement-level'));
  const task = await getRunTask(deps.db, taskId);
  if (!task || task.organization_id !== ctx.org.id) {
    throw unprocessable(`run task ${quoteValue(taskId)} does not exist in organization ${quoteValue(ctx.org.name)}`, '/data/relationships/task/data/id');
  }
  const limit = runTaskEntitlements(deps, ctx.org).workspaceLimit;
  if (limit !== null && (await listWorkspaceRunTasks(deps.db, ctx.ws.id)).total === 0 && (await countWorkspacesWithTasks(deps.db, ctx.org.id)) >= limit) {
    throw unprocessable(`run tasks may apply to at most ${limit} workspaces of organization ${quoteValue(ctx.org.name)} on its edition`);
  }
  const now = rfc3339(deps.clock.now());
  const row: WorkspaceRunTaskRow = {
    id: newId('wstask'),
    workspace_id: ctx.ws.id,
    task_id: task.id,
    stages: JSON.stringify(stagesOf(input) ?? ['post_plan']),
    enforcement_level: input['enforcement-level'],
    created_at: now,
    updated_at: now,
  };
  try {
    await insertWorkspaceRunTask(deps.db, row);
  } catch (err) {
    if (isUniqueViolation(err)) throw unprocessable(`run task ${quoteValue(task.name)} is already attached to this workspace; update that attachment instead`, '/data/relationships/task');
    throw err;
  }
  deps.logger.info({ by: principalLabel(p), workspaceTask: row.id, workspace: ctx.ws.id, task: task.id }, 'run task attached to a workspace');
  return row;
}

export async function updateAttachment(deps: Deps, p: Principal, row: WorkspaceRunTaskRow, input: WorkspaceTaskInput): Promise<WorkspaceRunTaskRow> {
  const stages = stagesOf(input);
  await updateWorkspaceRunTaskRow(deps.db, row.id, {
    updated_at: rfc3339(deps.clock.now()),
    ...(stages ? { stages: JSON.stringify(stages) } : {}),
    ...(input['enforcement-level'] ? { enforcement_level: input['enforcement-level'] } : {}),
  });
  deps.logger.info({ by: principalLabel(p), workspaceTask: row.id }, 'workspace run task updated');
  return (await getWorkspaceRunTask(deps.db, row.workspace_id, row.id))!;
}

export async function detachTask(deps: Deps, p: Principal, row: WorkspaceRunTaskRow): Promise<void> {
  await deleteWorkspaceRunTaskRow(deps.db, row.id);
  deps.logger.info({ by: principalLabel(p), workspaceTask: row.id }, 'run task detached from a workspace');
}
