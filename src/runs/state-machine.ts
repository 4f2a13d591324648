import type { Stage } from '../runtasks/settings.js';

/**
 * How a run moves: one table of transitions, HCP's status names. Terrace runs no Terraform: the
 * executor drives a run through the API (plan JSON, apply, complete-apply) and task stages
 * finish in between. Every change of a run's status goes through next(); nothing else writes it.
 */
export const RUN_STATUSES = [
  'pre_plan_running',
  'planning',
  'post_plan_running',
  'planned',
  'planned_and_finished',
  'pre_apply_running',
  'applying',
  'post_apply_running',
  'applied',
  'errored',
  'discarded',
  'canceled',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const RUN_EVENTS = [
  'stage_passed',
  'stage_failed',
  'plan_uploaded',
  'apply',
  'apply_succeeded',
  'apply_failed',
  'discard',
  'cancel',
] as const;
export type RunEvent = (typeof RUN_EVENTS)[number];

/** What a transition may depend on: which stages the run has tasks in, and whether it may apply. */
export interface RunFacts {
  hasStage(stage: Stage): boolean;
  /** Plan-only (speculative) runs finish after planning. */
  planOnly: boolean;
}

type Target = RunStatus | ((f: RunFacts) => RunStatus);

const afterPlan = (f: RunFacts): RunStatus => (f.planOnly ? 'planned_and_finished' : 'planned');
const planStage = (f: RunFacts): RunStatus => (f.hasStage('post_plan') ? 'post_plan_running' : afterPlan(f));
const applyStage = (f: RunFacts): RunStatus => (f.hasStage('pre_apply') ? 'pre_apply_running' : 'applying');
const appliedStage = (f: RunFacts): RunStatus => (f.hasStage('post_apply') ? 'post_apply_running' : 'applied');

/** From status, on event: the next status. Absent means the event is refused in that status (409). */
export const TRANSITIONS: Record<RunStatus, Partial<Record<RunEvent, Target>>> = {
  pre_plan_running: { stage_passed: 'planning', stage_failed: 'errored', cancel: 'canceled' },
  planning: { plan_uploaded: planStage, cancel: 'canceled' },
  post_plan_running: { stage_passed: afterPlan, stage_failed: 'errored', cancel: 'canceled' },
  planned: { apply: applyStage, discard: 'discarded' },
  planned_and_finished: {},
  pre_apply_running: { stage_passed: 'applying', stage_failed: 'errored', cancel: 'canceled' },
  applying: { apply_succeeded: appliedStage, apply_failed: 'errored', cancel: 'canceled' },
  // post_apply never halts a run: a failed stage still ends it applied.
  post_apply_running: { stage_passed: 'applied', stage_failed: 'applied' },
  applied: {},
  errored: {},
  discarded: {},
  canceled: {},
};

/** The status a run is created in. */
export function initialStatus(f: RunFacts): RunStatus {
  return f.hasStage('pre_plan') ? 'pre_plan_running' : 'planning';
}

export function next(status: RunStatus, event: RunEvent, f: RunFacts): RunStatus | null {
  const t = TRANSITIONS[status]?.[event];
  if (t === undefined) return null;
  return typeof t === 'function' ? t(f) : t;
}

/** The task stage a run status waits on, if any. */
export function stageOf(status: RunStatus): Stage | null {
  switch (status) {
    case 'pre_plan_running':
      return 'pre_plan';
    case 'post_plan_running':
      return 'post_plan';
    case 'pre_apply_running':
      return 'pre_apply';
    case 'post_apply_running':
      return 'post_apply';
    default:
      return null;
  }
}

export const FINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['planned_and_finished', 'applied', 'errored', 'discarded', 'canceled']);

/** status-timestamps key for entering a status ("planned" → "planned-at"). */
export function timestampKey(status: string): string {
  return `${status.replace(/_/g, '-')}-at`;
}

/** Actions HCP advertises on a run, from its status. */
export function runActions(status: RunStatus) {
  return {
    'is-cancelable': TRANSITIONS[status].cancel !== undefined,
    'is-confirmable': TRANSITIONS[status].apply !== undefined,
    'is-discardable': TRANSITIONS[status].discard !== undefined,
    'is-force-cancelable': false,
  };
}
