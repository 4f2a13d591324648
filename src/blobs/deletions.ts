import { rfc3339 } from '../clock.js';
import type { Queryable } from '../db/index.js';
import type { Deps } from '../deps.js';

/**
 * Deleting rows and the blobs they point at cannot be one transaction. Recording the keys in
 * the transaction that deletes the rows, then deleting the blobs, then the records, means a
 * crash at any point leaves neither a row pointing at a missing blob nor a blob nobody will
 * delete: whoever finishes (deleteRecordedBlobs) or sweeps up (drainBlobDeletions) completes it.
 */
export async function recordBlobDeletions(tx: Queryable, keys: readonly string[], now: Date): Promise<void> {
  const at = rfc3339(now);
  for (let i = 0; i < keys.length; i += 100) {
    const rows = keys.slice(i, i + 100).map((key) => ({ key, created_at: at }));
    await tx.insertInto('blob_deletions').values(rows).onConflict((oc) => oc.column('key').doNothing()).execute();
  }
}

/** Deletes the recorded blobs, then their records. Throws (leaving the records) if the blob store does. */
export async function deleteRecordedBlobs(deps: Deps, keys: readonly string[]): Promise<void> {
  for (const key of keys) await deps.blobs.delete(key);
  for (let i = 0; i < keys.length; i += 100) {
    await deps.db.deleteFrom('blob_deletions').where('key', 'in', keys.slice(i, i + 100)).execute();
  }
}

/** Finishes every recorded deletion (left by a crash or a failed blob delete), batch by batch; returns how many. */
export async function drainBlobDeletions(deps: Deps, batch = 100): Promise<number> {
  let n = 0;
  for (;;) {
    const rows = await deps.db.selectFrom('blob_deletions').select('key').orderBy('key').limit(batch).execute();
    if (rows.length === 0) return n;
    await deleteRecordedBlobs(
      deps,
      rows.map((r) => r.key),
    );
    n += rows.length;
  }
}
