import { registerRetentionParticipant } from './organizations/retention-sweep.js';
import { stateRetentionParticipant } from './state/retention.js';

/**
 * How domains take part in each other's work, registered once at start-up before any job runs,
 * so organizations/ and jobs/ import none of the domains that depend on them.
 */
export function registerDomainHooks(): void {
  registerRetentionParticipant(stateRetentionParticipant);
}
