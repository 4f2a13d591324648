import { workspacePrefix } from '../blobs/layout.js';
import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation, type Queryable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { ApiError, conflict, notFound, quoteValue, unprocessable } from '../http/errors.js';
import { ApiErrors } from '../http/jsonapi.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { newId } from '../ids.js';
import { orgAccess, type OrganizationRow } from '../organizations/access.js';
import { parseSettings } from '../organizations/settings.js';
import { getAgentPool, getOrganizationById, getOrganizationByName } from '../organizations/store.js';
import { workspaceAccess, type WorkspaceAccess } from './access.js';
import { listFilter } from './list-filter.js';
import { resolveRelations, writeRelations, type WorkspaceRelations } from './relations.js';
import { effectiveExecution, parseVcsRepo } from './serialize.js';
import { INERT_KEYS, parseInert, type VcsRepo, type VcsRepoInput, type WorkspaceInput } from './settings.js';
import {
  currentStateVersions,
  deleteWorkspaceRow,
  getWorkspaceById,
  getWorkspaceByName,
  insertWorkspace,
  latestVersionPending,
  listWorkspaces,
  lockIfUnlocked,
  unlock,
  updateWorkspaceRow,
  type LockHolder,
  type WorkspaceRow,
} from './store.js';

export interface WorkspaceContext {
  ws: WorkspaceRow;
  org: OrganizationRow;
  access: WorkspaceAccess;
}

const ATTR = (k: string) => `/data/attributes/${k}`;
const hidden = (what: string) => notFound(`${what} not found, or you are not authorized to see it`);

/** The organization named in a path, with the caller's workspace access; 404 unless it may see workspaces. */
export async function organizationForWorkspaces(deps: Deps, p: Principal, orgName: string): Promise<{ org: OrganizationRow; access: WorkspaceAccess }> {
  const org = await getOrganizationByName(deps.db, orgName);
  const access = org ? workspaceAccess(await orgAccess(deps.db, p, org.id)) : undefined;
  if (!org || !access?.readOutputs) throw hidden(`organization ${quoteValue(orgName)}`);
  return { org, access };
}

/** A page of an organization's workspaces with their current state versions, for callers who may see them. */
export async function workspacesOf(deps: Deps, p: Principal, orgName: string, query: URLSearchParams, page: { limit: number; offset: number }) {
  const { org, access } = await organizationForWorkspaces(deps, p, orgName);
  // The query is read only once the caller may see the organization: its 400s reveal nothing.
  const { rows, total } = await listWorkspaces(deps.db, listFilter(query, org.id), page);
  return { org, access, rows, total, current: await currentStateVersions(deps.db, rows) };
}

/** A workspace by id, if the caller may at least read its outputs; 404 otherwise. */
export async function workspaceById(deps: Deps, p: Principal, id: string): Promise<WorkspaceContext> {
  const ws = await getWorkspaceById(deps.db, id);
  const org = ws ? await getOrganizationById(deps.db, ws.organization_id) : undefined;
  const access = org ? workspaceAccess(await orgAccess(deps.db, p, org.id)) : undefined;
  if (!ws || !org || !access?.readOutputs) throw hidden(`workspace ${quoteValue(id)}`);
  return { ws, org, access };
}

export async function workspaceByName(deps: Deps, p: Principal, orgName: string, name: string): Promise<WorkspaceContext> {
  const { org, access } = await organizationForWorkspaces(deps, p, orgName);
  const ws = await getWorkspaceByName(deps.db, org.id, name);
  if (!ws) throw hidden(`workspace ${quoteValue(`${orgName}/${name}`)}`);
  return { ws, org, access };
}

export function requireManage(ctx: { access: WorkspaceAccess }, what = 'workspace'): void {
  // The caller sees the workspace but may not change it: answer as HCP does, "not found".
  authorize(ctx.access.manage, () => hidden(what));
}

/** A workspace by id that the caller may change; 404 otherwise. Call before reading a body. */
export async function workspaceByIdForUpdate(deps: Deps, p: Principal, id: string): Promise<WorkspaceContext> {
  const ctx = await workspaceById(deps, p, id);
  requireManage(ctx, `workspace ${quoteValue(id)}`);
  return ctx;
}

export async function workspaceByNameForUpdate(deps: Deps, p: Principal, orgName: string, name: string): Promise<WorkspaceContext> {
  const ctx = await workspaceByName(deps, p, orgName, name);
  requireManage(ctx, `workspace ${quoteValue(`${orgName}/${name}`)}`);
  return ctx;
}

/** The organization named in a path, if the caller may create workspaces in it; 404 otherwise. */
export async function organizationForWorkspaceCreate(deps: Deps, p: Principal, orgName: string): Promise<{ org: OrganizationRow; access: WorkspaceAccess }> {
  const target = await organizationForWorkspaces(deps, p, orgName);
  requireCreate(target);
  return target;
}

function requireCreate({ org, access }: { org: OrganizationRow; access: WorkspaceAccess }): void {
  authorize(access.manage, () => notFound(`organization ${quoteValue(org.name)} not found, or you are not authorized to create workspaces in it`));
}

function throwAll(errors: ApiError[]): void {
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ApiErrors(errors);
}

/** go-tfe sends "" for pointers it does not mean: treat them as absent. */
const blank = (v: string | null | undefined) => (v === undefined || v === null || v.trim() === '' ? null : v);

function mergeVcsRepo(current: VcsRepo | null, input: VcsRepoInput, errors: ApiError[]): VcsRepo | null {
  const ptr = (k: string) => `${ATTR('vcs-repo')}/${k}`;
  const next: VcsRepo = {
    identifier: blank(input.identifier) ?? current?.identifier ?? '',
    branch: input.branch !== undefined ? (input.branch ?? '') : (current?.branch ?? ''),
    'ingress-submodules': input['ingress-submodules'] ?? current?.['ingress-submodules'] ?? false,
    'oauth-token-id': input['oauth-token-id'] !== undefined ? blank(input['oauth-token-id']) : (current?.['oauth-token-id'] ?? null),
    'github-app-installation-id':
      input['github-app-installation-id'] !== undefined ? blank(input['github-app-installation-id']) : (current?.['github-app-installation-id'] ?? null),
    'tags-regex': input['tags-regex'] !== undefined ? blank(input['tags-regex']) : (current?.['tags-regex'] ?? null),
  };
  if (!next.identifier) errors.push(unprocessable('vcs-repo.identifier is required (for example "org/repo")', ptr('identifier')));
  else if (!/^[^\s/]+(\/[^\s/]+)+$/.test(next.identifier)) {
    errors.push(unprocessable(`vcs-repo.identifier ${quoteValue(next.identifier)} must look like "org/repo"`, ptr('identifier')));
  }
  if (!next['oauth-token-id'] && !next['github-app-installation-id']) {
    errors.push(unprocessable('vcs-repo needs oauth-token-id (or github-app-installation-id)', ptr('oauth-token-id')));
  }
  if (next['oauth-token-id'] && next['github-app-installation-id']) {
    errors.push(unprocessable('vcs-repo takes oauth-token-id or github-app-installation-id, not both', ptr('github-app-installation-id')));
  }
  if (next['tags-regex'] !== null) {
    try {
      new RegExp(next['tags-regex']);
    } catch {
      errors.push(unprocessable(`vcs-repo.tags-regex ${quoteValue(next['tags-regex'])} is not a valid regular expression`, ptr('tags-regex')));
    }
  }
  return next;
}

interface Resolved {
  row: Omit<
    WorkspaceRow,
    'id' | 'organization_id' | 'created_at' | 'updated_at' | 'locked' | 'locked_by_kind' | 'locked_by_id' | 'lock_reason' | 'current_state_version_id' | 'project_id'
  >;
}

/** Applies an input over the current values (or defaults) and enforces the rules between attributes. */
async function resolve(db: Queryable, org: OrganizationRow, current: WorkspaceRow | null, a: WorkspaceInput): Promise<Resolved> {
  const errors: ApiError[] = [];
  const name = a.name ?? current?.name ?? '';

  // Execution mode: explicit on the workspace, or (null) the organization's default.
  let mode = current?.execution_mode ?? null;
  let pool = current?.agent_pool_id ?? null;
  if (a.operations !== undefined && a['execution-mode'] !== undefined) {
    errors.push(unprocessable('operations is deprecated and cannot be given together with execution-mode', ATTR('operations')));
  }
  const requested = a['execution-mode'] ?? (a.operations === undefined ? undefined : a.operations ? 'remote' : 'local');
  if (requested !== undefined) {
    mode = requested;
    if (mode !== 'agent') pool = null;
  } else if (a['setting-overwrites']?.['execution-mode'] === false) {
    mode = null;
    pool = null;
  }
  if (a['agent-pool-id'] !== undefined) {
    const given = blank(a['agent-pool-id']);
    const effective = mode ?? effectiveExecution({ execution_mode: null } as WorkspaceRow, org).mode;
    if (given !== null && effective !== 'agent') {
      errors.push(unprocessable(`agent-pool-id must not be given when execution-mode is ${effective}`, ATTR('agent-pool-id')));
    } else if (given !== null) {
      mode = 'agent';
      pool = given;
    }
  }
  if (mode === 'agent') {
    if (!pool) errors.push(unprocessable('agent-pool-id is required when execution-mode is agent', ATTR('agent-pool-id')));
    else {
      const p = await getAgentPool(db, pool);
      if (!p || p.organization_id !== org.id) errors.push(unprocessable(`agent-pool-id: ${quoteValue(pool)} is not an agent pool of this organization`, ATTR('agent-pool-id')));
    }
  }

  let vcs = current ? parseVcsRepo(current.vcs_repo) : null;
  if (a['vcs-repo'] === null) vcs = null;
  else if (a['vcs-repo'] !== undefined) vcs = mergeVcsRepo(vcs, a['vcs-repo'], errors);

  const inert = current ? parseInert(current.attributes) : parseInert('{}');
  const target = inert as unknown as Record<string, unknown>;
  for (const k of INERT_KEYS) if (a[k] !== undefined) target[k] = a[k];
  if (vcs?.['tags-regex'] && (a['trigger-prefixes']?.length || a['trigger-patterns']?.length || a['file-triggers-enabled'] === true)) {
    errors.push(unprocessable('vcs-repo.tags-regex cannot be combined with trigger-prefixes, trigger-patterns or file-triggers-enabled', `${ATTR('vcs-repo')}/tags-regex`));
  }
  throwAll(errors);

  return {
    row: {
      name,
      name_lower: name.toLowerCase(),
      description: a.description !== undefined ? (a.description ?? '') : (current?.description ?? ''),
      working_directory: a['working-directory'] !== undefined ? (a['working-directory'] ?? '') : (current?.working_directory ?? ''),
      execution_mode: mode,
      agent_pool_id: mode === 'agent' ? pool : null,
      auto_apply: a['auto-apply'] !== undefined ? (a['auto-apply'] ? 1 : 0) : (current?.auto_apply ?? 0),
      terraform_version: a['terraform-version'] ?? current?.terraform_version ?? 'latest',
      vcs_repo: vcs ? JSON.stringify(vcs) : null,
      attributes: JSON.stringify(inert),
    },
  };
}

const nameTaken = (name: string) => unprocessable(`name: ${quoteValue(name)} has already been taken`, ATTR('name'));

export async function createWorkspace(
  deps: Deps,
  p: Principal,
  org: OrganizationRow,
  access: WorkspaceAccess,
  a: WorkspaceInput & { name: string },
  relations: WorkspaceRelations = {},
): Promise<WorkspaceRow> {
  requireCreate({ org, access });
  const { row } = await resolve(deps.db, org, null, a);
  const resolved = await resolveRelations(deps.db, org, relations, null);
  if (await getWorkspaceByName(deps.db, org.id, a.name)) throw nameTaken(a.name);
  const now = rfc3339(deps.clock.now());
  const ws: WorkspaceRow = {
    ...row,
    id: newId('ws'),
    organization_id: org.id,
    project_id: resolved.projectId,
    locked: 0,
    locked_by_kind: null,
    locked_by_id: null,
    lock_reason: null,
    current_state_version_id: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await inTransaction(deps.db, async (tx) => {
      await insertWorkspace(tx, ws);
      await writeRelations(tx, org.id, ws.id, resolved, now);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(a.name);
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), workspace: ws.id, organization: org.id, name: ws.name }, 'workspace created');
  return ws;
}

export async function updateWorkspace(deps: Deps, p: Principal, ctx: WorkspaceContext, a: WorkspaceInput, relations: WorkspaceRelations = {}): Promise<WorkspaceRow> {
  requireManage(ctx);
  const { ws, org } = ctx;
  const { row } = await resolve(deps.db, org, ws, a);
  const resolved = await resolveRelations(deps.db, org, relations, ws.project_id);
  if (row.name_lower !== ws.name_lower) {
    const other = await getWorkspaceByName(deps.db, org.id, row.name);
    if (other && other.id !== ws.id) throw nameTaken(row.name);
  }
  const project_id = resolved.projectId;
  const updated: WorkspaceRow = { ...ws, ...row, project_id, updated_at: rfc3339(deps.clock.now()) };
  try {
    await inTransaction(deps.db, async (tx) => {
      await updateWorkspaceRow(tx, ws.id, { ...row, project_id, updated_at: updated.updated_at });
      await writeRelations(tx, org.id, ws.id, resolved, updated.updated_at);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(row.name);
    throw err;
  }
  const changed = [...Object.entries(a), ...Object.entries(relations)].filter(([, v]) => v !== undefined).map(([k]) => k);
  deps.logger.info({ actor: principalLabel(p), workspace: ws.id, changed }, 'workspace updated');
  return updated;
}

/** Blob prefix holding everything of one workspace (under its organization's, so deleting that covers it). */
export function workspaceBlobPrefix(ws: { id: string; organization_id: string }): string {
  return workspacePrefix(ws.organization_id, ws.id);
}

/**
 * Deletes the workspace: rows in one statement (state versions and outputs cascade), then its
 * blobs. safe refuses while resources are under management; a non-owner needs the
 * organization's allow-force-delete-workspaces for that too.
 */
export async function deleteWorkspace(deps: Deps, p: Principal, ctx: WorkspaceContext, opts: { safe: boolean }): Promise<void> {
  requireManage(ctx);
  const { ws, org, access } = ctx;
  const current = (await currentStateVersions(deps.db, [ws])).get(ws.id);
  const forceAllowed = access.org.owner || parseSettings(org.attributes)['allow-force-delete-workspaces'];
  if (current && (opts.safe || !forceAllowed)) {
    // 2: its processing failed for good, so "retry shortly" would never come true.
    if (current.resources_processed === 2) {
      throw conflict(
        'the resources of the current state version could not be counted (its processing failed), so it is not known whether the workspace manages resources; push a new state version, or delete the workspace without safe-delete as an owner',
      );
    }
    if (current.resources_processed !== 1) {
      throw conflict('the current state version is still being processed, so it is not yet known whether the workspace manages resources; retry shortly');
    }
    if ((current.resource_count ?? 0) > 0) {
      throw conflict(
        opts.safe
          ? `workspace ${quoteValue(ws.name)} manages ${current.resource_count} resources; destroy them first, or delete the workspace without safe-delete`
          : `workspace ${quoteValue(ws.name)} manages ${current.resource_count} resources; only organization owners may delete it unless the organization allows force deletes (allow-force-delete-workspaces)`,
      );
    }
  }
  await deleteWorkspaceRow(deps.db, ws.id);
  deps.logger.info({ actor: principalLabel(p), workspace: ws.id, organization: org.id, name: ws.name }, 'workspace deleted');
  const prefix = workspaceBlobPrefix(ws);
  try {
    for await (const b of deps.blobs.list(prefix)) await deps.blobs.delete(b.key);
  } catch (err) {
    deps.logger.warn({ err, workspace: ws.id, prefix }, 'could not remove the blobs of a deleted workspace');
  }
}

/** Who holds a lock: the user, the team (team token) or the organization (organization token). */
export function lockHolder(p: Principal): LockHolder {
  if (p.kind === 'user') return { kind: 'user', id: p.user.id };
  if (p.kind === 'team') return { kind: 'team', id: p.teamId };
  return { kind: 'organization', id: p.organizationId };
}

export function heldBy(ws: WorkspaceRow, p: Principal): boolean {
  const h = lockHolder(p);
  return ws.locked === 1 && ws.locked_by_kind === h.kind && ws.locked_by_id === h.id;
}

export async function lockWorkspace(deps: Deps, p: Principal, ctx: WorkspaceContext, reason: string | null): Promise<WorkspaceRow> {
  requireManage(ctx);
  const h = lockHolder(p);
  const now = rfc3339(deps.clock.now());
  // go-tfe maps 409 on this path to ErrWorkspaceLocked.
  if (!(await lockIfUnlocked(deps.db, ctx.ws.id, h, reason, now))) throw conflict(`workspace ${quoteValue(ctx.ws.name)} is already locked`);
  deps.logger.info({ actor: principalLabel(p), workspace: ctx.ws.id }, 'workspace locked');
  return (await getWorkspaceById(deps.db, ctx.ws.id))!;
}

export async function unlockWorkspace(deps: Deps, p: Principal, ctx: WorkspaceContext, opts: { force: boolean }): Promise<WorkspaceRow> {
  requireManage(ctx);
  const now = rfc3339(deps.clock.now());
  const ws = ctx.ws;
  if (ws.locked !== 1) throw conflict(`workspace ${quoteValue(ws.name)} is already unlocked`);
  if (!opts.force && !heldBy(ws, p)) {
    throw conflict(`workspace ${quoteValue(ws.name)} is locked by someone else; only the lock holder may unlock it (or use actions/force-unlock)`);
  }
  // Terraform retries on this exact wording while its state upload is still in flight.
  if (!opts.force && (await latestVersionPending(deps.db, ws.id, now))) {
    throw conflict('Unable to unlock workspace. The latest state version is still pending.');
  }
  await unlock(deps.db, ws.id, now);
  deps.logger.info({ actor: principalLabel(p), workspace: ws.id, force: opts.force }, opts.force ? 'workspace force-unlocked' : 'workspace unlocked');
  return (await getWorkspaceById(deps.db, ws.id))!;
}
