import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { newId } from '../ids.js';
import { orgAccess, type OrgAccess, type OrganizationRow } from '../organizations/access.js';
import { entitlementsFor } from '../organizations/entitlements.js';
import { visibleOrganization } from '../organizations/service.js';
import { getOrganizationById } from '../organizations/store.js';
import { sendTaskRequest, taskUrlProblem } from './outbound.js';
import { parseGlobal, type GlobalConfiguration, type TaskInput } from './settings.js';
import {
  countRunTasks,
  deleteRunTaskRow,
  getRunTask,
  hmacKeyOf,
  insertRunTask,
  sealHmacKey,
  updateRunTaskRow,
  workspaceTasksOf,
  type RunTaskRow,
} from './store.js';

export interface VisibleTask {
  task: RunTaskRow;
  org: OrganizationRow;
  access: OrgAccess;
}

const ATTR = (k: string) => `/data/attributes/${k}`;
const managersOnly = (org: string) =>
  notFound(`organization ${quoteValue(org)} not found, or you may not manage its run tasks (owners, teams with manage-run-tasks and the organization token may)`);

/** Owners, teams with manage-run-tasks and the organization token manage an organization's run tasks. */
export function canManageRunTasks(access: OrgAccess): boolean {
  return access.member && (access.owner || access.organizationToken || access.permissions['manage-run-tasks']);
}

/** What the organization's entitlement set allows for run tasks (the one place run tasks read it). */
export function runTaskEntitlements(deps: Deps, _org: OrganizationRow) {
  const ent = entitlementsFor(deps.config.edition);
  return { global: ent['global-run-tasks'], taskLimit: ent['run-task-limit'], workspaceLimit: ent['run-task-workspace-limit'] };
}

/** The organization named in a path, if the caller may see its run tasks (any member). */
export async function organizationForTasks(deps: Deps, p: Principal, name: string) {
  return visibleOrganization(deps, p, name);
}

/** The organization named in a path, if the caller may create run tasks in it; 404 otherwise. */
export async function organizationForTaskCreate(deps: Deps, p: Principal, name: string) {
  const target = await visibleOrganization(deps, p, name);
  authorize(canManageRunTasks(target.access), () => managersOnly(name));
  return target;
}

/** A run task the caller may see (any member of its organization); 404 otherwise. */
export async function visibleTask(deps: Deps, p: Principal, id: string): Promise<VisibleTask> {
  const task = await getRunTask(deps.db, id);
  const org = task ? await getOrganizationById(deps.db, task.organization_id) : undefined;
  const access = org ? await orgAccess(deps.db, p, org.id) : undefined;
  if (!task || !org || !access?.member) throw notFound(`run task ${quoteValue(id)} not found, or you are not authorized to see it`);
  return { task, org, access };
}

/** A run task the caller may change or delete; 404 otherwise. Call before reading a body. */
export async function taskForManagement(deps: Deps, p: Principal, id: string): Promise<VisibleTask> {
  const vt = await visibleTask(deps, p, id);
  authorize(canManageRunTasks(vt.access), () => notFound(`run task ${quoteValue(id)} not found, or you may not manage it`));
  return vt;
}

/**
 * The verification request: a complete, typed, signed payload (integrators check the signature
 * and parse the body before they look at the token) marked as a test by access_token
 * "test-token", the marker HashiCorp's integrator scaffold checks.
 */
function verificationPayload(deps: Deps, org: OrganizationRow) {
  const base = deps.config.publicUrl;
  return {
    payload_version: 1,
    stage: 'pre_plan',
    access_token: 'test-token',
    capabilities: { outcomes: true },
    configuration_version_download_url: null,
    configuration_version_id: 'cv-verification0000',
    is_speculative: true,
    organization_name: org.name,
    run_app_url: `${base}/app/${org.name}`,
    run_created_at: rfc3339(deps.clock.now()),
    run_created_by: 'terrace',
    run_id: 'run-verification000',
    run_message: 'Terrace run task verification',
    task_result_callback_url: `${base}/api/v2/task-results/taskrs-verification/callback`,
    task_result_enforcement_level: 'advisory',
    task_result_id: 'taskrs-verification',
    vcs_branch: null,
    vcs_commit_url: null,
    vcs_pull_request_url: null,
    vcs_repo_url: null,
    workspace_app_url: `${base}/app/${org.name}`,
    workspace_id: 'ws-verification0000',
    workspace_name: 'verification',
    workspace_working_directory: '',
  };
}

async function verify(deps: Deps, org: OrganizationRow, url: string, hmacKey: string): Promise<void> {
  const r = await sendTaskRequest(url, verificationPayload(deps, org), hmacKey, { timeoutMs: deps.config.runTaskRequestTimeoutMs, publicUrl: deps.config.publicUrl });
  if (!r.ok) {
    throw unprocessable(
      `the run task URL did not pass verification: Terrace POSTed a signed test request (access_token "test-token") and got ${r.outcome}; the integrator must answer 200`,
      ATTR('url'),
    );
  }
}

function checkUrl(url: string): void {
  const problem = taskUrlProblem(url);
  if (problem) throw unprocessable(`url ${problem}`, ATTR('url'));
}

/** go-tfe sends null descriptions; the provider sends "" to clear a key and omits it to keep it. */
function hmacKeyInput(input: TaskInput): string | null | undefined {
  return input['hmac-key'] !== undefined ? input['hmac-key'] : input.hmac_key;
}

function mergeGlobal(current: GlobalConfiguration | null, input: TaskInput['global-configuration']): GlobalConfiguration | null {
  if (input === undefined) return current;
  if (input === null) return null;
  return {
    enabled: input.enabled ?? current?.enabled ?? false,
    stages: input.stages ?? current?.stages ?? ['post_plan'],
    'enforcement-level': input['enforcement-level'] ?? current?.['enforcement-level'] ?? 'advisory',
  };
}

export async function createTask(deps: Deps, p: Principal, org: OrganizationRow, input: TaskInput & { name: string; url: string }): Promise<RunTaskRow> {
  checkUrl(input.url);
  const ent = runTaskEntitlements(deps, org);
  if (ent.taskLimit !== null && (await countRunTasks(deps.db, org.id)) >= ent.taskLimit) {
    throw unprocessable(`organization ${quoteValue(org.name)} may have at most ${ent.taskLimit} run task integration(s) on its edition; delete one first`, ATTR('name'));
  }
  const key = hmacKeyInput(input) ?? '';
  await verify(deps, org, input.url, key);
  const now = rfc3339(deps.clock.now());
  // Without the global-run-tasks entitlement, HCP ignores global-configuration (still 201).
  const global = ent.global ? mergeGlobal(null, input['global-configuration']) : null;
  const row: RunTaskRow = {
    id: newId('task'),
    organization_id: org.id,
    name: input.name,
    name_lower: input.name.toLowerCase(),
    url: input.url,
    description: input.description ?? '',
    category: 'task',
    enabled: input.enabled === false ? 0 : 1,
    hmac_key_sealed: sealHmacKey(deps.secrets, key),
    global_configuration: global ? JSON.stringify(global) : null,
    created_at: now,
    updated_at: now,
  };
  try {
    await insertRunTask(deps.db, row);
  } catch (err) {
    if (isUniqueViolation(err)) throw unprocessable(`name ${quoteValue(input.name)} has already been taken in this organization`, ATTR('name'));
    throw err;
  }
  deps.logger.info({ by: principalLabel(p), task: row.id, organization: org.id }, 'run task created');
  return row;
}

export async function updateTask(deps: Deps, p: Principal, vt: VisibleTask, input: TaskInput): Promise<RunTaskRow> {
  const { task, org } = vt;
  if (input.url !== undefined) checkUrl(input.url);
  const keyInput = hmacKeyInput(input);
  const url = input.url ?? task.url;
  const keyChanged = keyInput !== undefined && keyInput !== (task.hmac_key_sealed === null ? '' : hmacKeyOf(deps.secrets, task));
  if (url !== task.url || keyChanged) await verify(deps, org, url, keyInput ?? hmacKeyOf(deps.secrets, task));
  const ent = runTaskEntitlements(deps, org);
  const changes: Parameters<typeof updateRunTaskRow>[2] = { updated_at: rfc3339(deps.clock.now()), url };
  if (input.name !== undefined) Object.assign(changes, { name: input.name, name_lower: input.name.toLowerCase() });
  if (input.description !== undefined) changes.description = input.description ?? '';
  if (input.enabled !== undefined) changes.enabled = input.enabled ? 1 : 0;
  if (keyInput !== undefined) changes.hmac_key_sealed = sealHmacKey(deps.secrets, keyInput);
  if (ent.global && input['global-configuration'] !== undefined) {
    const g = mergeGlobal(parseGlobal(task.global_configuration), input['global-configuration']);
    changes.global_configuration = g ? JSON.stringify(g) : null;
  }
  try {
    await updateRunTaskRow(deps.db, task.id, changes);
  } catch (err) {
    if (isUniqueViolation(err)) throw unprocessable(`name ${quoteValue(input.name)} has already been taken in this organization`, ATTR('name'));
    throw err;
  }
  deps.logger.info({ by: principalLabel(p), task: task.id }, 'run task updated');
  return (await getRunTask(deps.db, task.id))!;
}

/** A task still attached to workspaces is refused (422, naming them), as HCP's UI refuses it. */
export async function deleteTask(deps: Deps, p: Principal, vt: VisibleTask): Promise<void> {
  await inTransaction(deps.db, async (tx) => {
    const attached = (await workspaceTasksOf(tx, [vt.task.id])).get(vt.task.id) ?? [];
    if (attached.length > 0) {
      const ids = attached.slice(0, 10).map((w) => w.workspace_id).join(', ');
      throw unprocessable(`run task ${quoteValue(vt.task.name)} is attached to ${attached.length} workspace(s) (${ids}); remove it from them first`);
    }
    await deleteRunTaskRow(tx, vt.task.id);
  });
  deps.logger.info({ by: principalLabel(p), task: vt.task.id }, 'run task deleted');
}
