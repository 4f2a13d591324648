import type { Queryable } from '../db/index.js';
import { quoteValue, unprocessable } from '../http/errors.js';
import type { OrganizationRow } from '../organizations/access.js';
import { projectForWorkspace } from '../projects/service.js';
import { parseBindings, parseTagNames, parseTagRefs, relationshipData, type Binding } from '../tags/rules.js';
import { ensureTags, replaceBindings, setWorkspaceTags, tagsByIds } from '../tags/store.js';

/**
 * What a workspace create or update body says about tags, bindings and project, as go-tfe and
 * Terraform's cloud block send it: the tag-names attribute, relationships.tags (by id or name),
 * relationships.tag-bindings and relationships.project. Absent means "leave as it is".
 */
export interface WorkspaceRelations {
  /** Tag names (tag-names and relationships.tags by name). */
  tagNames?: string[];
  tagIds?: string[];
  bindings?: Binding[];
  /** A project id; null (or absent on create) means the organization's default project. */
  projectId?: string | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseWorkspaceRelations(tagNames: string[] | undefined, relationships: Record<string, unknown>): WorkspaceRelations {
  const out: WorkspaceRelations = {};
  if (tagNames !== undefined) out.tagNames = parseTagNames(tagNames, '/data/attributes/tag-names');
  const tags = relationshipData(relationships, 'tags');
  if (tags.present) {
    const refs = parseTagRefs(tags.data, '/data/relationships/tags/data', { allowEmpty: true });
    out.tagNames = [...new Set([...(out.tagNames ?? []), ...refs.names])];
    out.tagIds = refs.ids;
  }
  const bindings = relationshipData(relationships, 'tag-bindings');
  if (bindings.present) out.bindings = parseBindings(bindings.data, '/data/relationships/tag-bindings/data', { allowEmpty: true });
  const project = relationshipData(relationships, 'project');
  if (project.present) {
    const d = project.data;
    // go-tfe sends a full projects node (attributes and all): only its id counts.
    if (d === null) out.projectId = null;
    else if (isObject(d) && d.type === 'projects' && typeof d.id === 'string' && d.id !== '') out.projectId = d.id;
    else throw unprocessable('relationships.project.data must be {"type":"projects","id":"prj-…"} or null', '/data/relationships/project/data');
  }
  return out;
}

export interface ResolvedRelations {
  rel: WorkspaceRelations;
  /** The project the workspace is to be in: the one the body names, else its current one (on create, the default). */
  projectId: string;
}

/**
 * Checks what the body names exists in the organization, before anything is written. current is
 * the workspace's project (null when creating it).
 */
export async function resolveRelations(db: Queryable, org: OrganizationRow, rel: WorkspaceRelations, current: string | null): Promise<ResolvedRelations> {
  if (rel.tagIds?.length) {
    const found = new Set((await tagsByIds(db, org.id, rel.tagIds)).map((t) => t.id));
    const missing = rel.tagIds.find((id) => !found.has(id));
    if (missing) throw unprocessable(`relationships.tags: ${quoteValue(missing)} is not a tag of organization ${quoteValue(org.name)}`, '/data/relationships/tags/data');
  }
  if (rel.projectId === undefined && current !== null) return { rel, projectId: current };
  return { rel, projectId: (await projectForWorkspace(db, org, rel.projectId ?? null)).id };
}

/**
 * Writes tags and bindings inside the workspace's transaction. On create they are added; on update
 * tag-names and relationships.tags replace the tag list and tag-bindings replace the bindings (as
 * go-tfe documents for its update options).
 */
export async function writeRelations(tx: Queryable, organizationId: string, workspaceId: string, r: ResolvedRelations, now: string): Promise<void> {
  const { rel } = r;
  if (rel.tagNames !== undefined || rel.tagIds !== undefined) {
    const ids = [...(await ensureTags(tx, organizationId, rel.tagNames ?? [], now)), ...(rel.tagIds ?? [])];
    await setWorkspaceTags(tx, workspaceId, [...new Set(ids)], now);
  }
  if (rel.bindings !== undefined) await replaceBindings(tx, { workspaceId }, rel.bindings, now);
}

