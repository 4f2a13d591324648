import type { Config } from '../config.js';
import { retentionSweepJob, RETENTION_SWEEP, sweepRetention } from '../organizations/retention-sweep.js';
import { stateJobHandlers } from '../state/processing.js';
import type { JobHandler, RecurringJob } from './runner.js';

/** Every job kind this build knows, by domain. A runner claims only kinds listed here. */
export function jobHandlers(): Record<string, JobHandler> {
  return { ...stateJobHandlers, [RETENTION_SWEEP]: sweepRetention };
}

/** The kinds that repeat, each one row that is rescheduled after every run. */
export function recurringJobs(config: Config): RecurringJob[] {
  return [retentionSweepJob(config.retentionSweepIntervalSeconds * 1000)];
}
