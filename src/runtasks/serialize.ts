import type { ResourceObject } from '../http/jsonapi.js';
import type { OrganizationRow } from '../organizations/access.js';
import { parseGlobal, parseStages } from './settings.js';
import type { RunTaskRow, WorkspaceRunTaskRow } from './store.js';

const ref = (type: string, id: string) => ({ type, id });

/** HCP's tasks shape; hmac-key is write-only (always null); global-configuration only where entitled. */
export function serializeTask(task: RunTaskRow, org: OrganizationRow, attachments: WorkspaceRunTaskRow[], showGlobal: boolean): ResourceObject {
  const attributes: Record<string, unknown> = {
    name: task.name,
    url: task.url,
    description: task.description,
    category: task.category,
    enabled: task.enabled === 1,
    'hmac-key': null,
    'created-at': task.created_at,
    'updated-at': task.updated_at,
  };
  const global = parseGlobal(task.global_configuration);
  if (showGlobal) attributes['global-configuration'] = global ?? { enabled: false, stages: ['post_plan'], 'enforcement-level': 'advisory' };
  const wsTasks = { data: attachments.map((a) => ref('workspace-tasks', a.id)) };
  return {
    id: task.id,
    type: 'tasks',
    attributes,
    relationships: {
      organization: { data: ref('organizations', org.name) },
      // go-tfe and the spec read workspace-tasks; the docs' samples say tasks: both are sent.
      'workspace-tasks': wsTasks,
      tasks: wsTasks,
      'agent-pool': { data: null },
    },
    links: { self: `/api/v2/tasks/${task.id}` },
  };
}

/** HCP's workspace-tasks shape: both stages and the deprecated stage (= stages[0]). */
export function serializeWorkspaceTask(row: WorkspaceRunTaskRow): ResourceObject {
  const stages = parseStages(row.stages);
  return {
    id: row.id,
    type: 'workspace-tasks',
    attributes: {
      'enforcement-level': row.enforcement_level,
      stage: stages[0] ?? 'post_plan',
      stages,
      'created-at': row.created_at,
      'updated-at': row.updated_at,
    },
    relationships: {
      task: { data: ref('tasks', row.task_id), links: { related: `/api/v2/tasks/${row.task_id}` } },
      workspace: { data: ref('workspaces', row.workspace_id), links: { related: `/api/v2/workspaces/${row.workspace_id}` } },
    },
    links: { self: `/api/v2/workspaces/${row.workspace_id}/tasks/${row.id}` },
  };
}
