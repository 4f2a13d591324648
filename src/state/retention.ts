import type { RetentionParticipant } from '../organizations/retention-sweep.js';
import { deleteOldStateVersions } from './store.js';

/** Under a delete-older policy: state versions older than the cutoff, except each workspace's current one. */
export const stateRetentionParticipant: RetentionParticipant = {
  name: 'state-versions',
  async purge(tx, req) {
    const r = await deleteOldStateVersions(tx, req.organizationId, req.olderThan, req.limit);
    return {
      removed: { 'state-versions': r.ids.length, 'state-version-outputs': r.outputs },
      ids: r.ids,
      blobKeys: r.blobKeys,
      done: r.ids.length < req.limit,
    };
  },
};
