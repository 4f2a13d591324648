import type { Readable } from 'node:stream';
import { BlobNotFoundError } from '../blobs/types.js';
import { inTransaction } from '../db/index.js';
import { newId } from '../ids.js';
import { PermanentJobError, type JobFailureHook, type JobHandler, type JobKind } from '../jobs/runner.js';
import { analyzeState, assertJsonDepth, StateFormatError } from './analyze.js';
import { parseJsonStateOutputs, resolveOutputs } from './output-types.js';
import { blobKeysOf, getStateVersion, markResourcesProcessed } from './store.js';

/** Extracts outputs and resource counts from a finalized state version. */
export const PROCESS_STATE_VERSION = 'state.process';
/** Removes a state version whose upload URL expired before its state arrived. */
export const EXPIRE_STATE_UPLOAD = 'state.expire-upload';

function stateVersionId(payload: unknown): string {
  const id = (payload as { stateVersionId?: unknown } | null)?.stateVersionId;
  if (typeof id !== 'string') throw new PermanentJobError('payload has no stateVersionId');
  return id;
}

async function readAll(stream: Readable, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of stream) {
    n += (c as Buffer).length;
    if (n > max) throw new PermanentJobError(`the stored document exceeds ${max} bytes`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

const BATCH = 100;

/**
 * Streams the stored state, takes the outputs (from json-state-outputs when the client sent
 * them), and writes them together with resources-processed in one transaction: until that
 * commits no output of the version is visible, afterwards all are. Safe to run twice.
 */
export const processStateVersion: JobHandler = async (deps, payload) => {
  const id = stateVersionId(payload);
  const sv = await getStateVersion(deps.db, id);
  // Deleted (with its workspace) or already done: nothing to do.
  if (!sv || sv.status !== 'finalized' || sv.resources_processed === 1 || !sv.blob_key) return;

  let summary;
  let fromJson = null;
  try {
    summary = await analyzeState(await deps.blobs.get(sv.blob_key));
    if (sv.json_outputs_blob_key) {
      const raw = await readAll(await deps.blobs.get(sv.json_outputs_blob_key), deps.config.maxStateBytes);
      assertJsonDepth(raw);
      const parsed = parseJsonStateOutputs(JSON.parse(raw.toString('utf8')));
      if (typeof parsed === 'string') throw new StateFormatError(`json-state-outputs: ${parsed}`);
      fromJson = parsed;
    }
  } catch (err) {
    // The bytes were checked on the way in; if they are gone or broken now, retrying cannot help.
    if (err instanceof BlobNotFoundError || err instanceof StateFormatError || err instanceof SyntaxError) {
      throw new PermanentJobError(`state version ${id} cannot be processed: ${err.message}`);
    }
    throw err;
  }
  const outputs = resolveOutputs(summary.outputs, fromJson);
  const rows = outputs.map((o, position) => {
    const json = JSON.stringify(o.value ?? null);
    return {
      id: newId('wsout'),
      state_version_id: id,
      position,
      name: o.name,
      sensitive: o.sensitive ? 1 : 0,
      type: o.type,
      detailed_type: JSON.stringify(o.detailedType),
      value: o.sensitive ? deps.secrets.encrypt(json) : json,
    };
  });
  const terraformVersion = typeof summary.terraformVersion === 'string' ? summary.terraformVersion : null;

  await inTransaction(deps.db, async (tx) => {
    const still = await tx.selectFrom('state_versions').select('resources_processed').where('id', '=', id).executeTakeFirst();
    if (!still || still.resources_processed === 1) return;
    await tx.deleteFrom('state_version_outputs').where('state_version_id', '=', id).execute();
    for (let i = 0; i < rows.length; i += BATCH) {
      await tx.insertInto('state_version_outputs').values(rows.slice(i, i + BATCH)).execute();
    }
    await tx
      .updateTable('state_versions')
      .set({ resources_processed: 1, resource_count: summary.resourceCount, terraform_version: terraformVersion })
      .where('id', '=', id)
      .execute();
  });
  deps.logger.info({ stateVersion: id, outputs: rows.length, resources: summary.resourceCount }, 'state version processed');
};

/** Deletes the state version if its upload never completed; a finalized one is left alone. */
export const expireStateUpload: JobHandler = async (deps, payload) => {
  const id = stateVersionId(payload);
  const sv = await getStateVersion(deps.db, id);
  if (!sv || sv.status !== 'pending') return;
  const res = await deps.db.deleteFrom('state_versions').where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
  if (Number(res.numDeletedRows) !== 1) return;
  for (const key of blobKeysOf(sv)) await deps.blobs.delete(key);
  deps.logger.info({ stateVersion: id }, 'pending state version expired: its upload URL was never used');
};

/** resources_processed once processing has failed for good: outputs answer a clear error, not 503. */
export const PROCESSING_FAILED = 2;

/**
 * The processing of a state version failed for good (its state cannot be read, or every attempt
 * failed): the version says so, so its outputs answer a clear error instead of "still being
 * processed" for ever. A later state version is processed on its own.
 */
export const markProcessingFailed: JobFailureHook = async (deps, payload, job, lastError) => {
  const id = stateVersionId(payload);
  if (await markResourcesProcessed(deps.db, id, 0, PROCESSING_FAILED)) {
    deps.logger.warn({ stateVersion: id, job: job.id, reason: lastError }, 'state version marked as failed processing: its outputs cannot be served');
  }
};

export const stateJobHandlers: Record<string, JobHandler | JobKind> = {
  [PROCESS_STATE_VERSION]: { run: processStateVersion, failed: markProcessingFailed },
  [EXPIRE_STATE_UPLOAD]: expireStateUpload,
};
