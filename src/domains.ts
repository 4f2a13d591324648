import type { Config } from './config.js';
import type { JobHandler, JobKind, RecurringJob } from './jobs/runner.js';
import { registerOrganizationCreateHook } from './organizations/hooks.js';
import { retentionSweepJob, RETENTION_SWEEP, registerRetentionParticipant, sweepRetention } from './organizations/retention-sweep.js';
import { stateJobHandlers } from './state/processing.js';
import { stateRetentionParticipant } from './state/retention.js';
import { createOwnersTeam } from './teams/service.js';

/**
 * Where the domains meet, at start-up: how domains take part in each other's work, registered
 * once before any request or job runs, so organizations/ and jobs/ import none of the domains
 * that depend on them. Registering twice changes nothing.
 */
export function registerDomainHooks(): void {
  registerOrganizationCreateHook(createOwnersTeam);
  registerRetentionParticipant(stateRetentionParticipant);
}

/** Every job kind this build knows, by domain. A runner claims only kinds listed here. */
export function jobHandlers(): Record<string, JobHandler | JobKind> {
  return { ...stateJobHandlers, [RETENTION_SWEEP]: sweepRetention };
}

/** The kinds that repeat, each one row that is rescheduled after every run. */
export function recurringJobs(config: Config): RecurringJob[] {
  return [retentionSweepJob(config.retentionSweepIntervalSeconds * 1000)];
}
