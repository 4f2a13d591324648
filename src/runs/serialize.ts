import type { ResourceObject } from '../http/jsonapi.js';
import { runActions, type RunStatus } from './state-machine.js';
import type { ConfigurationVersionRow, RunRow } from './store.js';
import type { OutcomeRow, TaskResultRow, TaskStageRow } from './task-store.js';

const ref = (type: string, id: string) => ({ type, id });
const json = (s: string): Record<string, unknown> => {
  try {
    return JSON.parse(s) as Record<string, unknown>;
  } catch {
    return {};
  }
};
const durationMs = (created: string, ended: string | null | undefined) => (ended ? Math.max(0, new Date(ended).getTime() - new Date(created).getTime()) : 0);

/** HCP's configuration-versions shape; upload-url only in the create answer. */
export function serializeConfigurationVersion(cv: ConfigurationVersionRow, uploadUrl: string | null = null): ResourceObject {
  return {
    id: cv.id,
    type: 'configuration-versions',
    attributes: {
      'auto-queue-runs': cv.auto_queue_runs === 1,
      error: null,
      'error-message': null,
      source: cv.source,
      speculative: cv.speculative === 1,
      provisional: cv.provisional === 1,
      status: cv.status,
      'status-timestamps': json(cv.status_timestamps),
      'changed-files': [],
      'upload-url': uploadUrl,
      size: cv.size,
      'created-at': cv.created_at,
    },
    relationships: {
      workspace: { data: ref('workspaces', cv.workspace_id) },
      'ingress-attributes': { data: null },
    },
    links: { self: `/api/v2/configuration-versions/${cv.id}`, download: `/api/v2/configuration-versions/${cv.id}/download` },
  };
}

export function serializeRun(run: RunRow, stages: TaskStageRow[], canManage: boolean): ResourceObject {
  const status = run.status as RunStatus;
  return {
    id: run.id,
    type: 'runs',
    attributes: {
      actions: canManage ? runActions(status) : { 'is-cancelable': false, 'is-confirmable': false, 'is-discardable': false, 'is-force-cancelable': false },
      'auto-apply': false,
      'allow-empty-apply': false,
      'canceled-at': (json(run.status_timestamps)['canceled-at'] as string | undefined) ?? null,
      'created-at': run.created_at,
      'has-changes': false,
      'is-destroy': run.is_destroy === 1,
      message: run.message,
      'plan-only': run.plan_only === 1,
      refresh: true,
      'refresh-only': false,
      source: 'tfe-api',
      status,
      'status-timestamps': json(run.status_timestamps),
      'trigger-reason': 'manual',
      'error-message': run.error_message,
      permissions: {
        'can-apply': canManage,
        'can-cancel': canManage,
        'can-discard': canManage,
        'can-force-cancel': false,
        'can-force-execute': false,
        'can-override-policy-check': false,
      },
    },
    relationships: {
      workspace: { data: ref('workspaces', run.workspace_id) },
      'configuration-version': { data: ref('configuration-versions', run.configuration_version_id), links: { related: `/api/v2/configuration-versions/${run.configuration_version_id}` } },
      'task-stages': { data: stages.map((s) => ref('task-stages', s.id)), links: { related: `/api/v2/runs/${run.id}/task-stages` } },
    },
    links: { self: `/api/v2/runs/${run.id}` },
  };
}

export function serializeStage(s: TaskStageRow, results: TaskResultRow[]): ResourceObject {
  const ts = json(s.status_timestamps);
  const ended = (ts['passed-at'] ?? ts['failed-at'] ?? ts['canceled-at'] ?? ts['errored-at']) as string | undefined;
  return {
    id: s.id,
    type: 'task-stages',
    attributes: {
      stage: s.stage,
      status: s.status,
      'status-timestamps': ts,
      duration: durationMs((ts['running-at'] as string | undefined) ?? s.created_at, ended),
      'created-at': s.created_at,
      'updated-at': s.updated_at,
      permissions: { 'can-override-policy': false, 'can-override-tasks': false, 'can-override': false },
      actions: { 'is-overridable': false },
    },
    relationships: {
      run: { data: ref('runs', s.run_id) },
      'task-results': { data: results.map((r) => ref('task-results', r.id)) },
      'policy-evaluations': { data: [] },
    },
    links: { self: `/api/v2/task-stages/${s.id}` },
  };
}

export function serializeResult(r: TaskResultRow, outcomesCount: number, isSpeculative: boolean): ResourceObject {
  const stage = { data: ref('task-stages', r.task_stage_id) };
  return {
    id: r.id,
    type: 'task-results',
    attributes: {
      status: r.status,
      message: r.message,
      url: r.url,
      'status-timestamps': json(r.status_timestamps),
      'created-at': r.created_at,
      'updated-at': r.updated_at,
      'task-id': r.task_id,
      'task-name': r.task_name,
      'task-url': r.task_url,
      stage: r.stage,
      'is-speculative': isSpeculative,
      'workspace-task-id': r.workspace_task_id,
      'workspace-task-enforcement-level': r.enforcement_level,
      'agent-pool-id': null,
      'task-result-outcomes-count': outcomesCount,
      duration: durationMs(r.requested_at ?? r.created_at, r.final_at),
    },
    relationships: {
      // The docs and spec say task-stage, go-tfe reads task_stage: both are sent.
      'task-stage': stage,
      task_stage: stage,
      'task-result-outcomes': { links: { related: `/api/v2/task-results/${r.id}/outcomes` } },
    },
    links: { self: `/api/v2/task-results/${r.id}` },
  };
}

/** The read shape: tags as [{label: <header>, value: [{label, level}]}]; the body behind links.body. */
export function serializeOutcome(o: OutcomeRow): ResourceObject {
  const tags = Object.entries(json(o.tags)).map(([label, value]) => ({ label, value }));
  return {
    id: o.id,
    type: 'task-result-outcomes',
    attributes: { 'outcome-id': o.outcome_id, description: o.description, tags, url: o.url, 'created-at': o.created_at },
    relationships: { 'task-result': { data: ref('task-results', o.task_result_id), links: { related: `/api/v2/task-results/${o.task_result_id}` } } },
    links: { self: `/api/v2/task-result-outcomes/${o.id}`, ...(o.body !== null ? { body: `/api/v2/task-result-outcomes/${o.id}/body` } : {}) },
  };
}
