import { rfc3339 } from '../clock.js';
import type { ResourceObject } from '../http/jsonapi.js';
import type { TagBindingRow, TagRow } from './store.js';

/** go-tfe's Tag (workspace relationship lists carry only id and name). */
export function serializeTag(tag: TagRow): ResourceObject {
  return { id: tag.id, type: 'tags', attributes: { name: tag.name } };
}

/** go-tfe's OrganizationTag: the organization's tag with how many workspaces carry it. */
export function serializeOrganizationTag(tag: TagRow & { instance_count: number }, orgName: string): ResourceObject {
  return {
    id: tag.id,
    type: 'tags',
    attributes: { name: tag.name, 'instance-count': tag.instance_count, 'created-at': rfc3339(tag.created_at) },
    relationships: { organization: { data: { id: orgName, type: 'organizations' } } },
  };
}

export function serializeBinding(b: TagBindingRow): ResourceObject {
  return { id: b.id, type: 'tag-bindings', attributes: { key: b.key, value: b.value, 'created-at': rfc3339(b.created_at) } };
}

/**
 * A binding in force on a workspace: its own, or inherited from its project (a workspace's own
 * binding of a key hides the project's). links.inherited-from names the project.
 */
export function serializeEffectiveBinding(b: TagBindingRow): ResourceObject {
  const out: ResourceObject = { id: b.id, type: 'effective-tag-bindings', attributes: { key: b.key, value: b.value } };
  if (b.project_id) out.links = { 'inherited-from': `/api/v2/projects/${b.project_id}` };
  return out;
}

/** A workspace's own bindings over its project's: the bindings in force on it, by key. */
export function effectiveBindings(own: TagBindingRow[], inherited: TagBindingRow[]): TagBindingRow[] {
  const byKey = new Map<string, TagBindingRow>();
  for (const b of inherited) byKey.set(b.key, b);
  for (const b of own) byKey.set(b.key, b);
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
