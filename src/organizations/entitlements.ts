import type { Config } from '../config.js';

export type Edition = Config['edition'];

/** What an organization may use, in the entitlement set's attribute names. */
export interface Entitlements {
  agents: boolean;
  'global-run-tasks': boolean;
  'run-tasks': boolean;
  'run-task-limit': number | null;
  'run-task-workspace-limit': number | null;
  'run-task-mandatory-enforcement-limit': number | null;
}

/**
 * The one place that decides entitlements: every organization of an installation gets its
 * edition's set (TERRACE_EDITION). `free` is the seed's free edition: one run task integration,
 * applicable to up to ten workspaces. `premium` adds global run tasks. `standard` (the default)
 * has no run task limits and no global run tasks.
 */
export function entitlementsFor(edition: Edition): Entitlements {
  return {
    agents: true,
    'global-run-tasks': edition === 'premium',
    'run-tasks': true,
    'run-task-limit': edition === 'free' ? 1 : null,
    'run-task-workspace-limit': edition === 'free' ? 10 : null,
    'run-task-mandatory-enforcement-limit': null,
  };
}
