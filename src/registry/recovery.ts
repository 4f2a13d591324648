import { MODULES_PREFIX } from '../blobs/layout.js';
import { rfc3339 } from '../clock.js';
import { unclaimedTokenHash } from '../db/upload-claims.js';
import type { Deps } from '../deps.js';

/**
 * Start-up repair for a process that was killed mid-publish: uploads that were being received
 * go back to pending (their URL stays usable until it expires) and lose their partial blob, and
 * any blob under modules/ that no version row references is removed. Nothing half-published
 * survives a crash.
 */
export async function recoverRegistry(deps: Deps): Promise<{ resetUploads: number; orphansRemoved: number }> {
  const stuck = await deps.db
    .selectFrom('registry_module_versions')
    .select(['id', 'blob_key'])
    // Repeats the partial index's condition so SQLite uses it instead of scanning every version.
    .where('status', 'in', ['pending', 'uploading'])
    .where('status', '=', 'uploading')
    .execute();
  for (const v of stuck) {
    if (v.blob_key) await deps.blobs.delete(v.blob_key);
    await deps.db
      .updateTable('registry_module_versions')
      // The URL works again: its claim marker gives the token's hash back.
      .set({ status: 'pending', blob_key: null, upload_token_hash: unclaimedTokenHash('module'), updated_at: rfc3339(deps.clock.now()) })
      .where('id', '=', v.id)
      .where('status', '=', 'uploading')
      .execute();
  }
  // One scan for every referenced key (blob_key has no index; a lookup per listed blob would scan
  // the table each time). Safe only before this process serves: an upload claimed after the scan
  // would not be in it. A shared store (several instances) will need this as a leased job.
  const referenced = new Set(
    (await deps.db.selectFrom('registry_module_versions').select('blob_key').where('blob_key', 'is not', null).execute()).map((r) => r.blob_key),
  );
  let orphansRemoved = 0;
  for await (const blob of deps.blobs.list(MODULES_PREFIX)) {
    if (referenced.has(blob.key)) continue;
    await deps.blobs.delete(blob.key);
    orphansRemoved++;
  }
  if (stuck.length || orphansRemoved) {
    deps.logger.warn({ resetUploads: stuck.length, orphansRemoved }, 'recovered interrupted module uploads');
  }
  return { resetUploads: stuck.length, orphansRemoved };
}
