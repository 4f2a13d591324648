import { rfc3339 } from '../clock.js';
import { inTransaction, type Queryable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { orgAccess, type OrganizationRow } from '../organizations/access.js';
import { getOrganizationById } from '../organizations/store.js';
import type { Binding, TagRefs } from '../tags/rules.js';
import { effectiveBindings } from '../tags/serialize.js';
import {
  addWorkspaceTags,
  bindingsOf,
  deleteTags,
  deleteBindings,
  ensureTags,
  getTag,
  removeWorkspaceTags,
  tagsByIds,
  tagIdsByName,
  tagsOfWorkspace,
  tagWorkspaces,
  upsertBindings,
  workspaceIdsIn,
  type TagBindingRow,
  type TagRow,
} from '../tags/store.js';
import { workspaceAccess, type WorkspaceAccess } from './access.js';
import { requireManage, type WorkspaceContext } from './service.js';

// Reads are decided by workspaceById (the caller may see the workspace); changes need manage.

export async function workspaceTags(deps: Deps, ctx: WorkspaceContext): Promise<TagRow[]> {
  return tagsOfWorkspace(deps.db, ctx.ws.id);
}

/** Tag ids named by refs: names are looked up (or, when create is set, created); ids must be the organization's. */
async function tagIdsFor(deps: Deps, db: Queryable, org: OrganizationRow, refs: TagRefs, create: boolean): Promise<string[]> {
  const found = await tagsByIds(db, org.id, refs.ids);
  const missing = refs.ids.find((id) => !found.some((t) => t.id === id));
  if (missing) throw unprocessable(`data: ${quoteValue(missing)} is not a tag of organization ${quoteValue(org.name)}`, '/data');
  const named = create ? await ensureTags(db, org.id, refs.names, rfc3339(deps.clock.now())) : await tagIdsByName(db, org.id, refs.names);
  return [...new Set([...found.map((t) => t.id), ...named])];
}

/** Adds tags (new names create the organization's tag). */
export async function addTags(deps: Deps, p: Principal, ctx: WorkspaceContext, refs: TagRefs): Promise<void> {
  requireManage(ctx);
  await inTransaction(deps.db, async (tx) => {
    const ids = await tagIdsFor(deps, tx, ctx.org, refs, true);
    await addWorkspaceTags(tx, ctx.ws.id, ids, rfc3339(deps.clock.now()));
  });
  deps.logger.info({ actor: principalLabel(p), workspace: ctx.ws.id, added: refs }, 'workspace tags added');
}

/** Removes tags; names or ids the workspace does not carry are ignored. */
export async function removeTags(deps: Deps, p: Principal, ctx: WorkspaceContext, refs: TagRefs): Promise<void> {
  requireManage(ctx);
  await inTransaction(deps.db, async (tx) => removeWorkspaceTags(tx, ctx.ws.id, await tagIdsFor(deps, tx, ctx.org, refs, false)));
  deps.logger.info({ actor: principalLabel(p), workspace: ctx.ws.id, removed: refs }, 'workspace tags removed');
}

/**
 * The workspace's bindings, its single-string tags among them as keys with empty values (unless it
 * binds that key itself). Terraform's cloud block checks a list tag against both tag-names and the
 * bindings, and writes a binding when one is missing: a caller who may only read the workspace
 * could then not run terraform init.
 */
export async function workspaceBindings(deps: Deps, ctx: WorkspaceContext): Promise<TagBindingRow[]> {
  const [own, tags] = await Promise.all([bindingsOf(deps.db, { workspaceId: ctx.ws.id }), tagsOfWorkspace(deps.db, ctx.ws.id)]);
  const keyOnly = tags.map((t) => ({ id: t.id, workspace_id: ctx.ws.id, project_id: null, key: t.name, value: '', created_at: t.created_at }));
  return effectiveBindings(own, keyOnly);
}

/** The bindings in force: the workspace's own (key-only tags included) over those it inherits from its project. */
export async function effectiveWorkspaceBindings(deps: Deps, ctx: WorkspaceContext): Promise<TagBindingRow[]> {
  const [own, inherited] = await Promise.all([workspaceBindings(deps, ctx), bindingsOf(deps.db, { projectId: ctx.ws.project_id })]);
  return effectiveBindings(own, inherited);
}

export async function addBindings(deps: Deps, p: Principal, ctx: WorkspaceContext, bindings: Binding[]): Promise<TagBindingRow[]> {
  requireManage(ctx);
  await inTransaction(deps.db, (tx) => upsertBindings(tx, { workspaceId: ctx.ws.id }, bindings, rfc3339(deps.clock.now())));
  deps.logger.info({ actor: principalLabel(p), workspace: ctx.ws.id, keys: bindings.map((b) => b.key) }, 'workspace tag bindings added');
  return workspaceBindings(deps, ctx);
}

export async function removeAllBindings(deps: Deps, p: Principal, ctx: WorkspaceContext): Promise<void> {
  requireManage(ctx);
  await deleteBindings(deps.db, { workspaceId: ctx.ws.id });
  deps.logger.info({ actor: principalLabel(p), workspace: ctx.ws.id }, 'workspace tag bindings removed');
}

/** The organization's tags a caller may delete (from every workspace): those who manage workspaces. */
export function requireTagManagement(org: OrganizationRow, access: WorkspaceAccess): void {
  authorize(access.manage, () => notFound(`organization ${quoteValue(org.name)} not found, or you are not authorized to delete its tags`));
}

/** Deletes tags from the organization and every workspace; ids that are not the organization's tags are ignored. */
export async function deleteOrganizationTags(deps: Deps, p: Principal, org: OrganizationRow, access: WorkspaceAccess, ids: string[]): Promise<void> {
  requireTagManagement(org, access);
  const n = await deleteTags(deps.db, org.id, ids);
  deps.logger.info({ actor: principalLabel(p), organization: org.id, tags: ids, deleted: n }, 'organization tags deleted');
}

export interface TagContext {
  tag: TagRow;
  org: OrganizationRow;
  access: WorkspaceAccess;
}

/** An organization tag, if the caller may see the organization's workspaces; 404 otherwise. */
export async function tagById(deps: Deps, p: Principal, id: string): Promise<TagContext> {
  const tag = await getTag(deps.db, id);
  const org = tag ? await getOrganizationById(deps.db, tag.organization_id) : undefined;
  const access = org ? workspaceAccess(await orgAccess(deps.db, p, org.id)) : undefined;
  if (!tag || !org || !access?.readOutputs) throw notFound(`tag ${quoteValue(id)} not found, or you are not authorized to see it`);
  return { tag, org, access };
}

export async function tagByIdForUpdate(deps: Deps, p: Principal, id: string): Promise<TagContext> {
  const ctx = await tagById(deps, p, id);
  authorize(ctx.access.manage, () => notFound(`tag ${quoteValue(id)} not found, or you are not authorized to tag workspaces with it`));
  return ctx;
}

/** Puts the tag on the workspaces (ids of the tag's organization; any other is a 422). */
export async function addTagToWorkspaces(deps: Deps, p: Principal, ctx: TagContext, workspaceIds: string[]): Promise<void> {
  authorize(ctx.access.manage, () => notFound(`tag ${quoteValue(ctx.tag.id)} not found, or you are not authorized to tag workspaces with it`));
  const found = new Set(await workspaceIdsIn(deps.db, ctx.org.id, workspaceIds));
  const missing = workspaceIds.find((id) => !found.has(id));
  if (missing) throw unprocessable(`data: ${quoteValue(missing)} is not a workspace of organization ${quoteValue(ctx.org.name)}`, '/data');
  await inTransaction(deps.db, (tx) => tagWorkspaces(tx, ctx.tag.id, workspaceIds, rfc3339(deps.clock.now())));
  deps.logger.info({ actor: principalLabel(p), tag: ctx.tag.id, workspaces: workspaceIds }, 'tag added to workspaces');
}
