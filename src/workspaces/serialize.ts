import { rfc3339 } from '../clock.js';
import { toOne, type ResourceObject } from '../http/jsonapi.js';
import type { OrganizationRow } from '../organizations/access.js';
import { parseSettings } from '../organizations/settings.js';
import type { WorkspaceAccess } from './access.js';
import { parseInert, type VcsRepo } from './settings.js';
import type { StateVersionRow, WorkspaceRow } from './store.js';

export function parseVcsRepo(json: string | null): VcsRepo | null {
  if (!json) return null;
  try {
    return JSON.parse(json) as VcsRepo;
  } catch {
    return null;
  }
}

/** The execution mode and agent pool in force: the workspace's own, or the organization's defaults. */
export function effectiveExecution(ws: WorkspaceRow, org: OrganizationRow): { mode: 'remote' | 'local' | 'agent'; agentPoolId: string | null } {
  if (ws.execution_mode !== null) return { mode: ws.execution_mode, agentPoolId: ws.execution_mode === 'agent' ? ws.agent_pool_id : null };
  const s = parseSettings(org.attributes);
  return { mode: s['default-execution-mode'], agentPoolId: s['default-execution-mode'] === 'agent' ? s['default-agent-pool-id'] : null };
}

export function workspacePath(org: OrganizationRow, ws: WorkspaceRow): string {
  return `/api/v2/organizations/${encodeURIComponent(org.name)}/workspaces/${encodeURIComponent(ws.name)}`;
}

function renderVcsRepo(v: VcsRepo | null): Record<string, unknown> | null {
  if (!v) return null;
  // Without OAuth clients Terrace cannot know the provider or its web URL: null, not a guess.
  return {
    identifier: v.identifier,
    'display-identifier': v.identifier,
    branch: v.branch,
    'ingress-submodules': v['ingress-submodules'],
    'oauth-token-id': v['oauth-token-id'],
    ...(v['github-app-installation-id'] ? { 'github-app-installation-id': v['github-app-installation-id'] } : {}),
    'tags-regex': v['tags-regex'],
    'repository-http-url': null,
    'service-provider': null,
    'webhook-url': null,
  };
}

/** go-tfe's Workspace: exact JSON types, times RFC 3339, organization addressed by name. */
export function serializeWorkspace(
  ws: WorkspaceRow,
  org: OrganizationRow,
  access: WorkspaceAccess,
  current: StateVersionRow | undefined,
  tagNames: string[],
): ResourceObject {
  const { mode, agentPoolId } = effectiveExecution(ws, org);
  const inert = parseInert(ws.attributes);
  const vcs = parseVcsRepo(ws.vcs_repo);
  const orgSettings = parseSettings(org.attributes);
  const m = access.manage;
  const canForceDelete = access.org.owner || (m && orgSettings['allow-force-delete-workspaces']);
  const relationships: Record<string, unknown> = {
    organization: { data: { id: org.name, type: 'organizations' } },
    'current-state-version': toOne('state-versions', ws.current_state_version_id, `/api/v2/workspaces/${ws.id}/current-state-version`),
    'current-run': { data: null },
    'agent-pool': toOne('agent-pools', agentPoolId),
    project: { data: { id: ws.project_id, type: 'projects' }, links: { related: `/api/v2/projects/${ws.project_id}` } },
    'tag-bindings': { links: { related: `/api/v2/workspaces/${ws.id}/tag-bindings` } },
    'effective-tag-bindings': { links: { related: `/api/v2/workspaces/${ws.id}/effective-tag-bindings` } },
  };
  if (ws.locked === 1 && (ws.locked_by_kind === 'user' || ws.locked_by_kind === 'team') && ws.locked_by_id) {
    relationships['locked-by'] = { data: { id: ws.locked_by_id, type: ws.locked_by_kind === 'user' ? 'users' : 'teams' } };
  }
  return {
    id: ws.id,
    type: 'workspaces',
    attributes: {
      name: ws.name,
      description: ws.description,
      'working-directory': ws.working_directory,
      'execution-mode': mode,
      operations: mode !== 'local',
      'agent-pool-id': agentPoolId,
      'setting-overwrites': { 'execution-mode': ws.execution_mode !== null, 'agent-pool': ws.execution_mode !== null },
      'auto-apply': ws.auto_apply === 1,
      'terraform-version': ws.terraform_version,
      'vcs-repo': renderVcsRepo(vcs),
      'vcs-repo-identifier': vcs ? vcs.identifier : null,
      locked: ws.locked === 1,
      'resource-count': current?.resource_count ?? 0,
      'created-at': rfc3339(ws.created_at),
      'updated-at': rfc3339(ws.updated_at),
      'latest-change-at': rfc3339(ws.updated_at),
      environment: 'default',
      source: 'tfe-api',
      'source-name': inert['source-name'],
      'source-url': inert['source-url'],
      'tag-names': tagNames,
      'trigger-prefixes': inert['trigger-prefixes'],
      'trigger-patterns': inert['trigger-patterns'],
      'allow-destroy-plan': inert['allow-destroy-plan'],
      'auto-apply-run-trigger': inert['auto-apply-run-trigger'],
      'assessments-enabled': inert['assessments-enabled'],
      'file-triggers-enabled': inert['file-triggers-enabled'],
      'global-remote-state': inert['global-remote-state'],
      'queue-all-runs': inert['queue-all-runs'],
      'speculative-enabled': inert['speculative-enabled'],
      'structured-run-output-enabled': inert['structured-run-output-enabled'],
      'can-queue-destroy-plan': false,
      'migration-environment': null,
      permissions: {
        'can-update': m,
        'can-destroy': m,
        'can-force-delete': canForceDelete,
        'can-lock': m,
        'can-unlock': m,
        'can-force-unlock': m,
        'can-queue-run': false,
        'can-queue-apply': false,
        'can-queue-destroy': false,
        'can-read-settings': access.readOutputs,
        'can-update-variable': false,
        'can-manage-run-tasks': false,
        'can-read-state-versions': access.readStateVersions,
        'can-read-state-outputs': access.readOutputs,
        'can-create-state-versions': m,
      },
      actions: { 'is-destroyable': true },
    },
    relationships,
    links: { self: workspacePath(org, ws) },
  };
}
