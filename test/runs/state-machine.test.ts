import { describe, expect, it } from 'vitest';
import { FINAL_STATUSES, RUN_EVENTS, RUN_STATUSES, initialStatus, next, runActions, stageOf, type RunEvent, type RunStatus } from '../../src/runs/state-machine.js';
import { STAGES, type Stage } from '../../src/runtasks/settings.js';

/** Every combination of stages with tasks, and plan-only or not. */
const FACTS = [false, true].flatMap((planOnly) =>
  Array.from({ length: 16 }, (_, mask) => {
    const stages = STAGES.filter((_, i) => mask & (1 << i));
    return { hasStage: (s: Stage) => stages.includes(s), planOnly, label: `${stages.join('+') || 'none'}${planOnly ? ' plan-only' : ''}` };
  }),
);

/** The expected table, written out by hand: from status, event → next (or null: refused). */
function expected(s: RunStatus, e: RunEvent, f: (typeof FACTS)[number]): RunStatus | null {
  const afterPlan = f.planOnly ? 'planned_and_finished' : 'planned';
  const table: Partial<Record<RunStatus, Partial<Record<RunEvent, RunStatus>>>> = {
    pre_plan_running: { stage_passed: 'planning', stage_failed: 'errored', cancel: 'canceled' },
    planning: { plan_uploaded: f.hasStage('post_plan') ? 'post_plan_running' : afterPlan, cancel: 'canceled' },
    post_plan_running: { stage_passed: afterPlan, stage_failed: 'errored', cancel: 'canceled' },
    planned: { apply: f.hasStage('pre_apply') ? 'pre_apply_running' : 'applying', discard: 'discarded' },
    pre_apply_running: { stage_passed: 'applying', stage_failed: 'errored', cancel: 'canceled' },
    applying: { apply_succeeded: f.hasStage('post_apply') ? 'post_apply_running' : 'applied', apply_failed: 'errored', cancel: 'canceled' },
    post_apply_running: { stage_passed: 'applied', stage_failed: 'applied' },
  };
  return table[s]?.[e] ?? null;
}

describe('the run state machine', () => {
  it('moves exactly as the table says for every status, event and set of stages', () => {
    let checked = 0;
    for (const f of FACTS) {
      for (const s of RUN_STATUSES) {
        for (const e of RUN_EVENTS) {
          expect(next(s, e, f), `${s} --${e}--> (${f.label})`).toBe(expected(s, e, f));
          checked++;
        }
      }
    }
    expect(checked).toBe(32 * RUN_STATUSES.length * RUN_EVENTS.length);
  });

  it('never leaves a final status', () => {
    for (const s of FINAL_STATUSES) for (const e of RUN_EVENTS) for (const f of FACTS) expect(next(s, e, f)).toBeNull();
  });

  it('starts in pre_plan only when pre_plan has tasks, and a stage status waits on its stage', () => {
    for (const f of FACTS) expect(initialStatus(f)).toBe(f.hasStage('pre_plan') ? 'pre_plan_running' : 'planning');
    expect(RUN_STATUSES.map(stageOf).filter(Boolean)).toEqual(['pre_plan', 'post_plan', 'pre_apply', 'post_apply']);
  });

  it('a failed stage errors the run in pre_plan, post_plan and pre_apply, never in post_apply', () => {
    const f = FACTS.at(-1)!;
    expect(next('pre_plan_running', 'stage_failed', f)).toBe('errored');
    expect(next('post_plan_running', 'stage_failed', f)).toBe('errored');
    expect(next('pre_apply_running', 'stage_failed', f)).toBe('errored');
    expect(next('post_apply_running', 'stage_failed', f)).toBe('applied');
  });

  it('advertises the actions the table allows', () => {
    expect(runActions('planned')).toEqual({ 'is-cancelable': false, 'is-confirmable': true, 'is-discardable': true, 'is-force-cancelable': false });
    expect(runActions('applying')).toEqual({ 'is-cancelable': true, 'is-confirmable': false, 'is-discardable': false, 'is-force-cancelable': false });
    for (const s of FINAL_STATUSES) expect(Object.values(runActions(s)).every((v) => v === false)).toBe(true);
  });
});
