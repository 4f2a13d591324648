import { rfc3339 } from '../clock.js';
import type { ResourceObject } from '../http/jsonapi.js';
import type { OrganizationRow } from '../organizations/access.js';
import type { ProjectAccess } from './access.js';
import type { ProjectRow } from './store.js';

export const projectPath = (id: string) => `/api/v2/projects/${id}`;

/** go-tfe's Project: exact JSON types, organization addressed by name. */
export function serializeProject(p: ProjectRow, org: OrganizationRow, access: ProjectAccess, workspaceCount: number): ResourceObject {
  const m = access.manage;
  return {
    id: p.id,
    type: 'projects',
    attributes: {
      name: p.name,
      description: p.description,
      'is-unified': false,
      'is-default': p.is_default === 1,
      'created-at': rfc3339(p.created_at),
      'updated-at': rfc3339(p.updated_at),
      'workspace-count': workspaceCount,
      'team-count': 0,
      'stack-count': 0,
      'auto-destroy-activity-duration': null,
      permissions: {
        'can-read': access.read,
        'can-update': m,
        'can-destroy': m && p.is_default !== 1,
        'can-create-workspace': access.org.member && (access.org.owner || access.org.organizationToken || access.org.permissions['manage-workspaces']),
        'can-move-workspace': access.org.member && (access.org.owner || access.org.organizationToken || access.org.permissions['manage-workspaces']),
        'can-manage-tags': m,
        'can-manage-teams': false,
        'can-manage-in-hcp': false,
        'can-move-stack': false,
        'can-create-stack': false,
        'can-manage-varsets': false,
      },
    },
    relationships: {
      organization: { data: { id: org.name, type: 'organizations' } },
      workspaces: { links: { related: `/api/v2/organizations/${encodeURIComponent(org.name)}/workspaces?filter%5Bproject%5D%5Bid%5D=${p.id}` } },
      'tag-bindings': { links: { related: `${projectPath(p.id)}/tag-bindings` } },
      'effective-tag-bindings': { links: { related: `${projectPath(p.id)}/effective-tag-bindings` } },
    },
    links: { self: projectPath(p.id) },
  };
}
