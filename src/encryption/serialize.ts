import type { ResourceObject } from '../http/jsonapi.js';
import type { EncryptionStatus } from './service.js';

export function serializeEncryptionStatus(s: EncryptionStatus): ResourceObject {
  const p = s.job.progress;
  return {
    id: 'encryption',
    type: 'encryption-status',
    attributes: {
      'current-key-id': s.currentKeyId,
      'configured-key-ids': s.configuredKeyIds,
      'blobs-by-key-id': s.blobsByKeyId,
      'secrets-by-key-id': s.secretsByKeyId,
      'plaintext-blobs': s.plaintextBlobs,
      'missing-key-ids': s.missingKeyIds,
      complete: s.complete,
      job: {
        state: s.job.state,
        'next-run-at': s.job.nextRunAt,
        'last-error': s.job.lastError,
        progress: p && {
          'started-at': p.startedAt,
          step: p.step,
          rewrapped: p.rewrapped,
          reencrypted: p.reencrypted,
          sealed: p.sealed,
          missing: p.missing,
        },
      },
    },
  };
}
