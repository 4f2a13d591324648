import type { RetentionParticipant } from '../organizations/retention-sweep.js';
import { FINAL_STATUSES } from './state-machine.js';
import { deleteOldRunData } from './store.js';

/** Under a delete-older policy: final runs (plan JSON, task stages, outcome bodies) and unused configuration versions. */
export const runRetentionParticipant: RetentionParticipant = {
  name: 'runs',
  async purge(tx, req) {
    const r = await deleteOldRunData(tx, req.organizationId, req.olderThan, req.limit, [...FINAL_STATUSES]);
    const n = r.runIds.length + r.cvIds.length;
    return {
      removed: { runs: r.runIds.length, 'task-result-outcomes': r.outcomes, 'configuration-versions': r.cvIds.length },
      ids: [...r.runIds, ...r.cvIds],
      blobKeys: r.blobKeys,
      done: n < req.limit,
    };
  },
};
