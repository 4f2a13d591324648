import { rfc3339 } from '../clock.js';
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
    .where('status', '=', 'uploading')
    .execute();
  for (const v of stuck) {
    if (v.blob_key) await deps.blobs.delete(v.blob_key);
    await deps.db
      .updateTable('registry_module_versions')
      .set({ status: 'pending', blob_key: null, updated_at: rfc3339(deps.clock.now()) })
      .where('id', '=', v.id)
      .where('status', '=', 'uploading')
      .execute();
  }
  let orphansRemoved = 0;
  let batch: string[] = [];
  const sweep = async () => {
    const referenced = new Set(
      (await deps.db.selectFrom('registry_module_versions').select('blob_key').where('blob_key', 'in', batch).execute()).map((r) => r.blob_key),
    );
    for (const key of batch) {
      if (referenced.has(key)) continue;
      await deps.blobs.delete(key);
      orphansRemoved++;
    }
    batch = [];
  };
  for await (const blob of deps.blobs.list('modules/')) {
    batch.push(blob.key);
    if (batch.length === 500) await sweep();
  }
  if (batch.length) await sweep();
  if (stuck.length || orphansRemoved) {
    deps.logger.warn({ resetUploads: stuck.length, orphansRemoved }, 'recovered interrupted module uploads');
  }
  return { resetUploads: stuck.length, orphansRemoved };
}
