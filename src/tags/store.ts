import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { TagBindingsTable, TagsTable } from '../db/schema.js';
import { newId } from '../ids.js';
import { containsInsensitive } from '../organizations/store.js';
import type { Binding } from './rules.js';

export type TagRow = Selectable<TagsTable>;
export type TagBindingRow = Selectable<TagBindingsTable>;
/** What carries bindings: a workspace, or a project whose workspaces inherit them. */
export type BindingOwner = { workspaceId: string } | { projectId: string };

// ---- single-string tags ----

/** The tag names of each workspace, sorted. */
export async function tagNamesOf(db: Queryable, workspaceIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(workspaceIds.map((id) => [id, []]));
  if (workspaceIds.length === 0) return out;
  const rows = await db
    .selectFrom('workspace_tags')
    .innerJoin('tags', 'tags.id', 'workspace_tags.tag_id')
    .select(['workspace_tags.workspace_id', 'tags.name'])
    .where('workspace_tags.workspace_id', 'in', workspaceIds)
    .orderBy('tags.name')
    .execute();
  for (const r of rows) out.get(r.workspace_id)?.push(r.name);
  return out;
}

export async function tagsOfWorkspace(db: Queryable, workspaceId: string): Promise<TagRow[]> {
  return db
    .selectFrom('tags')
    .innerJoin('workspace_tags', 'workspace_tags.tag_id', 'tags.id')
    .selectAll('tags')
    .where('workspace_tags.workspace_id', '=', workspaceId)
    .orderBy('tags.name')
    .execute();
}

export async function getTag(db: Queryable, id: string): Promise<TagRow | undefined> {
  return db.selectFrom('tags').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function tagsByIds(db: Queryable, organizationId: string, ids: string[]): Promise<TagRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('tags').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute();
}

export async function tagIdsByName(db: Queryable, organizationId: string, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  return (await db.selectFrom('tags').select('id').where('organization_id', '=', organizationId).where('name', 'in', names).execute()).map((r) => r.id);
}

/** The ids of the named tags of an organization, creating those that do not exist yet. */
export async function ensureTags(db: Queryable, organizationId: string, names: string[], now: string): Promise<string[]> {
  if (names.length === 0) return [];
  await db
    .insertInto('tags')
    .values(names.map((name) => ({ id: newId('tag'), organization_id: organizationId, name, created_at: now })))
    .onConflict((oc) => oc.columns(['organization_id', 'name']).doNothing())
    .execute();
  return tagIdsByName(db, organizationId, names);
}

export async function addWorkspaceTags(db: Queryable, workspaceId: string, tagIds: string[], now: string): Promise<void> {
  if (tagIds.length === 0) return;
  await db
    .insertInto('workspace_tags')
    .values(tagIds.map((tag_id) => ({ workspace_id: workspaceId, tag_id, created_at: now })))
    .onConflict((oc) => oc.columns(['workspace_id', 'tag_id']).doNothing())
    .execute();
}

export async function removeWorkspaceTags(db: Queryable, workspaceId: string, tagIds: string[]): Promise<void> {
  if (tagIds.length === 0) return;
  await db.deleteFrom('workspace_tags').where('workspace_id', '=', workspaceId).where('tag_id', 'in', tagIds).execute();
}

/** Makes the workspace's tags exactly these (tag-names on update replaces the list). */
export async function setWorkspaceTags(db: Queryable, workspaceId: string, tagIds: string[], now: string): Promise<void> {
  let del = db.deleteFrom('workspace_tags').where('workspace_id', '=', workspaceId);
  if (tagIds.length > 0) del = del.where('tag_id', 'not in', tagIds);
  await del.execute();
  await addWorkspaceTags(db, workspaceId, tagIds, now);
}

export interface OrgTagFilter {
  organizationId: string;
  /** Substring of the name, case-insensitive (search[q]). */
  q?: string;
  /** Leaves out the tags of this workspace (filter[exclude][taggable][id]). */
  excludeWorkspaceId?: string;
}

/** An organization's tags with how many workspaces carry each. */
export async function listOrganizationTags(db: Queryable, f: OrgTagFilter, page: { limit: number; offset: number }) {
  let base = db.selectFrom('tags').where('tags.organization_id', '=', f.organizationId);
  if (f.q !== undefined) base = base.where(containsInsensitive('tags.name', f.q));
  if (f.excludeWorkspaceId !== undefined) {
    const excluded = f.excludeWorkspaceId;
    base = base.where((eb) =>
      eb.not(eb.exists(eb.selectFrom('workspace_tags').select('workspace_tags.tag_id').whereRef('workspace_tags.tag_id', '=', 'tags.id').where('workspace_tags.workspace_id', '=', excluded))),
    );
  }
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base
    .selectAll('tags')
    .select((eb) => eb.selectFrom('workspace_tags').select((e) => e.fn.countAll<number>().as('c')).whereRef('workspace_tags.tag_id', '=', 'tags.id').as('instance_count'))
    .orderBy('tags.name')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return { rows: rows.map((r) => ({ ...r, instance_count: Number(r.instance_count ?? 0) })), total: Number(n) };
}

/** Workspaces of the organization among ids (the others are unknown or another tenant's). */
export async function workspaceIdsIn(db: Queryable, organizationId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('workspaces').select('id').where('organization_id', '=', organizationId).where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}

export async function tagWorkspaces(db: Queryable, tagId: string, workspaceIds: string[], now: string): Promise<void> {
  if (workspaceIds.length === 0) return;
  await db
    .insertInto('workspace_tags')
    .values(workspaceIds.map((workspace_id) => ({ workspace_id, tag_id: tagId, created_at: now })))
    .onConflict((oc) => oc.columns(['workspace_id', 'tag_id']).doNothing())
    .execute();
}

/** Deletes an organization's tags (their workspace links cascade); ids of other organizations are left alone. */
export async function deleteTags(db: Queryable, organizationId: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const res = await db.deleteFrom('tags').where('organization_id', '=', organizationId).where('id', 'in', ids).executeTakeFirst();
  return Number(res.numDeletedRows);
}

// ---- key/value bindings ----

const ownerColumn = (o: BindingOwner) => ('workspaceId' in o ? (['workspace_id', o.workspaceId] as const) : (['project_id', o.projectId] as const));

export async function bindingsOf(db: Queryable, owner: BindingOwner): Promise<TagBindingRow[]> {
  const [col, id] = ownerColumn(owner);
  return db.selectFrom('tag_bindings').selectAll().where(col, '=', id).orderBy('key').execute();
}

/** Adds bindings, replacing the value of keys the owner already has (HCP's PATCH …/tag-bindings). */
export async function upsertBindings(db: Queryable, owner: BindingOwner, bindings: Binding[], now: string): Promise<void> {
  if (bindings.length === 0) return;
  const [col, id] = ownerColumn(owner);
  const keys = bindings.map((b) => b.key);
  await db.deleteFrom('tag_bindings').where(col, '=', id).where('key', 'in', keys).execute();
  await db
    .insertInto('tag_bindings')
    .values(
      bindings.map((b) => ({
        id: newId('tb'),
        workspace_id: col === 'workspace_id' ? id : null,
        project_id: col === 'project_id' ? id : null,
        key: b.key,
        value: b.value,
        created_at: now,
      })),
    )
    .execute();
}

/** Makes the owner's bindings exactly these (tag-bindings on a create or update body). */
export async function replaceBindings(db: Queryable, owner: BindingOwner, bindings: Binding[], now: string): Promise<void> {
  await deleteBindings(db, owner);
  await upsertBindings(db, owner, bindings, now);
}

export async function deleteBindings(db: Queryable, owner: BindingOwner): Promise<void> {
  const [col, id] = ownerColumn(owner);
  await db.deleteFrom('tag_bindings').where(col, '=', id).execute();
}
