import { setTimeout as sleep } from 'node:timers/promises';
import { deleteRecordedBlobs, recordBlobDeletions } from '../blobs/deletions.js';
import { sealedCopyKey } from '../blobs/layout.js';
import { BlobNotFoundError } from '../blobs/types.js';
import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { saveJobProgress, type JobHandler } from '../jobs/runner.js';
import { blobColumnsRegistered, sealedColumnsRegistered, type ColumnRef } from './registry.js';
import {
  dataKeysNotUnder,
  moveBlobColumn,
  plaintextBlobRows,
  replaceSealedValue,
  rewrapDataKey,
  sealedValuesNotUnder,
} from './store.js';

/**
 * The job that brings everything at rest under the current key: it re-wraps data keys and
 * re-encrypts sealed columns made under older keys (rotation), and seals blobs stored before
 * encryption. Keys change only with a restart, so each start that finds such work enqueues it
 * once (server.ts). Each batch commits with its progress, so an attempt cut short (a crash, a
 * SIGKILL) is resumed by the next from where it stopped, and every step is safe to repeat.
 */
export const ENCRYPTION_UPKEEP = 'encryption.upkeep';

export interface UpkeepProgress {
  startedAt: string;
  /** The step in hand ("data-keys", "secrets:<table>.<column>", "blobs:<table>.<column>"). */
  step: string;
  /** Ids up to this one are done in this step. */
  after: string;
  rewrapped: number;
  reencrypted: number;
  sealed: number;
  /** Rows pointing at a blob that is not in the store (nothing to seal). */
  missing: number;
}

export interface UpkeepPayload {
  run: UpkeepProgress | null;
}

interface Step {
  name: string;
  /** Does one batch after the cursor; returns the new cursor, or null when the step is done. */
  batch(deps: Deps, p: UpkeepProgress, jobId: string): Promise<string | null>;
}

function steps(): Step[] {
  return [
    { name: 'data-keys', batch: rewrapBatch },
    ...sealedColumnsRegistered().map((ref) => ({ name: `secrets:${ref.table}.${ref.column}`, batch: reencryptBatch(ref) })),
    ...blobColumnsRegistered().map((ref) => ({ name: `blobs:${ref.table}.${ref.column}`, batch: sealBatch(ref) })),
  ];
}

export const runEncryptionUpkeep: JobHandler = async (deps, payload, job) => {
  const all = steps();
  const saved = (payload as UpkeepPayload | null)?.run;
  const p: UpkeepProgress = saved && all.some((s) => s.name === saved.step)
    ? saved
    : { startedAt: rfc3339(deps.clock.now()), step: all[0]!.name, after: '', rewrapped: 0, reencrypted: 0, sealed: 0, missing: 0 };
  if (saved) deps.logger.info({ job: job.id, progress: saved }, 'encryption upkeep resumes an interrupted run');
  for (let i = all.findIndex((s) => s.name === p.step); i < all.length; i++) {
    const step = all[i]!;
    if (p.step !== step.name) Object.assign(p, { step: step.name, after: '' });
    for (;;) {
      const next = await step.batch(deps, p, job.id);
      if (next === null) break;
      p.after = next;
      if (deps.config.encryptionBatchPauseMs > 0) await sleep(deps.config.encryptionBatchPauseMs);
    }
  }
  const { rewrapped, reencrypted, sealed, missing } = p;
  if (rewrapped + reencrypted + sealed + missing > 0) {
    deps.logger.info({ job: job.id, currentKeyId: deps.secrets.currentKeyId, rewrapped, reencrypted, sealed, missing }, 'encryption upkeep finished');
  }
};

async function rewrapBatch(deps: Deps, p: UpkeepProgress, jobId: string): Promise<string | null> {
  const rows = await dataKeysNotUnder(deps.db, deps.secrets.currentKeyId, p.after, deps.config.encryptionBatchSize);
  if (rows.length === 0) return null;
  const updates = rows.map((row) => ({ row, ...deps.secrets.wrapDataKey(row.id, deps.secrets.unwrapDataKey(row.id, row.key_id, row.wrapped)) }));
  await inTransaction(deps.db, async (tx) => {
    for (const u of updates) await rewrapDataKey(tx, u.row, u.keyId, u.wrapped);
    await saveJobProgress(tx, jobId, { run: { ...p, rewrapped: p.rewrapped + updates.length, after: rows.at(-1)!.id } } satisfies UpkeepPayload);
  });
  // Counted once committed: PostgreSQL may run the transaction again.
  p.rewrapped += updates.length;
  return rows.at(-1)!.id;
}

function reencryptBatch(ref: ColumnRef): Step['batch'] {
  return async (deps, p, jobId) => {
    const rows = await sealedValuesNotUnder(deps.db, ref, deps.secrets.currentKeyId, p.after, deps.config.encryptionBatchSize);
    if (rows.length === 0) return null;
    const updates = rows.map((r) => ({ ...r, next: deps.secrets.encrypt(deps.secrets.decrypt(r.value)) }));
    await inTransaction(deps.db, async (tx) => {
      for (const u of updates) await replaceSealedValue(tx, ref, u.id, u.value, u.next);
      await saveJobProgress(tx, jobId, { run: { ...p, reencrypted: p.reencrypted + updates.length, after: rows.at(-1)!.id } } satisfies UpkeepPayload);
    });
    p.reencrypted += updates.length;
    return rows.at(-1)!.id;
  };
}

/** Seals each blob to a new key, flips its row in one transaction, then deletes the old blob. */
function sealBatch(ref: ColumnRef): Step['batch'] {
  return async (deps, p, jobId) => {
    const rows = await plaintextBlobRows(deps.db, ref, p.after, deps.config.encryptionBatchSize);
    if (rows.length === 0) return null;
    for (const row of rows) {
      const copy = sealedCopyKey(row.key);
      let source;
      try {
        source = await deps.blobs.get(row.key);
      } catch (err) {
        if (!(err instanceof BlobNotFoundError)) throw err;
        p.missing++;
        deps.logger.warn({ table: ref.table, id: row.id, blobKey: row.key }, 'a row points at a blob that is not in the store: nothing to seal');
        continue;
      }
      await deps.blobs.put(copy, source);
      const { moved, unwanted } = await inTransaction(deps.db, async (tx) => {
        const moved = await moveBlobColumn(tx, ref, row.id, row.key, copy);
        // The row moved on (deleted, replaced) meanwhile: the copy is what is not wanted.
        const unwanted = moved ? row.key : copy;
        await recordBlobDeletions(tx, [unwanted], deps.clock.now());
        await saveJobProgress(tx, jobId, { run: { ...p, sealed: p.sealed + (moved ? 1 : 0), after: row.id } } satisfies UpkeepPayload);
        return { moved, unwanted };
      });
      if (moved) p.sealed++;
      await deleteRecordedBlobs(deps, [unwanted]);
    }
    return rows.at(-1)!.id;
  };
}

/** Whether anything is under an older key or stored before encryption (cheap: one row each at most). */
export async function upkeepPending(deps: Deps): Promise<boolean> {
  const current = deps.secrets.currentKeyId;
  if ((await dataKeysNotUnder(deps.db, current, '', 1)).length > 0) return true;
  for (const ref of sealedColumnsRegistered()) if ((await sealedValuesNotUnder(deps.db, ref, current, '', 1)).length > 0) return true;
  for (const ref of blobColumnsRegistered()) if ((await plaintextBlobRows(deps.db, ref, '', 1)).length > 0) return true;
  return false;
}
