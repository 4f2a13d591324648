import { stateJobHandlers } from '../state/processing.js';
import type { JobHandler } from './runner.js';

/** Every job kind this build knows, by domain. A runner claims only kinds listed here. */
export function jobHandlers(): Record<string, JobHandler> {
  return { ...stateJobHandlers };
}
