import { rfc3339 } from '../clock.js';
import { FAILED_RUN_AT } from '../jobs/runner.js';
import type { Deps } from '../deps.js';
import { requireSiteAdmin } from '../identity/service.js';
import type { Principal } from '../identity/principal.js';
import { blobColumnsRegistered, sealedColumnsRegistered } from './registry.js';
import { dataKeyCounts, plaintextBlobCount, recurringJobRow, sealedValueCounts } from './store.js';
import { ENCRYPTION_UPKEEP, type UpkeepPayload, type UpkeepProgress } from './upkeep.js';

export interface EncryptionStatus {
  currentKeyId: string;
  configuredKeyIds: string[];
  blobsByKeyId: Record<string, number>;
  secretsByKeyId: Record<string, number>;
  plaintextBlobs: number;
  /** Key ids something is still sealed under that this process was not given. */
  missingKeyIds: string[];
  /** Nothing left under another key and nothing left in plaintext: older keys can be removed. */
  complete: boolean;
  job: { state: 'running' | 'scheduled' | 'failed' | 'idle'; nextRunAt: string | null; lastError: string | null; progress: UpkeepProgress | null };
}

/** Site admins only; anyone else sees 404. */
export async function encryptionStatus(deps: Deps, p: Principal): Promise<EncryptionStatus> {
  requireSiteAdmin(p);
  const blobsByKeyId = await dataKeyCounts(deps.db);
  const secretsByKeyId: Record<string, number> = {};
  for (const ref of sealedColumnsRegistered()) {
    for (const [k, n] of Object.entries(await sealedValueCounts(deps.db, ref))) secretsByKeyId[k] = (secretsByKeyId[k] ?? 0) + n;
  }
  let plaintextBlobs = 0;
  for (const ref of blobColumnsRegistered()) plaintextBlobs += await plaintextBlobCount(deps.db, ref);
  const current = deps.secrets.currentKeyId;
  const used = new Set([...Object.keys(blobsByKeyId), ...Object.keys(secretsByKeyId)]);
  const row = await recurringJobRow(deps.db, ENCRYPTION_UPKEEP);
  const now = rfc3339(deps.clock.now());
  let progress: UpkeepProgress | null = null;
  try {
    progress = row ? (JSON.parse(row.payload) as UpkeepPayload).run : null;
  } catch {
    // A payload that is not JSON is restarted by the runner; nothing to show.
  }
  return {
    currentKeyId: current,
    configuredKeyIds: deps.secrets.keyIds,
    blobsByKeyId,
    secretsByKeyId,
    plaintextBlobs,
    missingKeyIds: [...used].filter((id) => !deps.secrets.hasKey(id)).sort(),
    complete: plaintextBlobs === 0 && [...used].every((id) => id === current),
    job: {
      state: !row ? 'idle' : row.locked_until !== null && row.locked_until > now ? 'running' : row.run_at === FAILED_RUN_AT ? 'failed' : 'scheduled',
      nextRunAt: row?.run_at ?? null,
      lastError: row?.last_error ?? null,
      progress,
    },
  };
}
