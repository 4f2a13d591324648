import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { moduleArchiveKey, MODULES_PREFIX } from '../blobs/layout.js';
import { BlobNotFoundError, BlobTooLargeError } from '../blobs/types.js';
import { rfc3339 } from '../clock.js';
import { inTransaction, type Queryable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { ApiError, conflict, notFound, payloadTooLarge } from '../http/errors.js';
import { enqueue, JobRunner, PermanentJobError, wakeJobs, type JobFailureHook, type JobHandler, type JobKind, type RecurringJob } from '../jobs/runner.js';
import { ArchiveError, validateArchive } from './archive.js';
import { inspectFiles, wantedForInspection } from './inspect/index.js';
import {
  getVersionById,
  getVersionWithOrg,
  referencedBlobKeys,
  refreshModuleCache,
  resetStaleUpload,
  staleUploads,
  transitionVersion,
  type VersionRow,
  type VersionWithOrg,
} from './store.js';

/**
 * One ingestion path for module versions. Whatever produced a version's archive (an upload URL,
 * a VCS publisher running `git archive`) stores the bytes and, in the transaction that records
 * the blob on the version (status `ingesting`), queues a registry.ingest job. The job validates
 * the archive (size, entry count, unpacked size, ratio, traversal, links), inspects it, and
 * either publishes the version (`ok`) or refuses it (`errored`, with the reason, blob removed).
 * Every write is conditional on the status it expects, so running it twice, after a crash at any
 * point, or after the version was deleted ends in the same state.
 */
export const INGEST_MODULE_VERSION = 'registry.ingest';
/** Recurring: gives back the URLs of uploads whose process died. */
export const REGISTRY_UPKEEP = 'registry.upkeep';
/** Recurring: removes module archives no version references, once they are past the grace window. */
export const REGISTRY_ORPHAN_SWEEP = 'registry.orphan-sweep';

/** Inspection reads at most this much of one .tf or README file, and of all of them together. */
const MAX_INSPECTED_FILE_BYTES = 1024 * 1024;
const MAX_INSPECTED_TOTAL_BYTES = 16 * 1024 * 1024;
const MAX_WARNINGS = 100;

/** The statuses in which a version's archive is stored and its ingestion queued or running. */
export const INGESTING_STATUSES: readonly VersionRow['status'][] = ['ingesting'];
/** The statuses from which submitArchive takes an archive. */
const SUBMITTABLE: VersionRow['status'][] = ['pending', 'cloning'];

// Waiters in this process learn at once when a version leaves ingestion; others poll.
const settled = new EventEmitter();
settled.setMaxListeners(0);
const announce = (versionId: string) => settled.emit(versionId);

function versionIdOf(payload: unknown): string {
  const id = (payload as { versionId?: unknown } | null)?.versionId;
  if (typeof id !== 'string') throw new PermanentJobError('payload has no versionId');
  return id;
}

/**
 * A fresh key per stored archive (the version's key plus a nonce): two producers of one version,
 * or a new upload after a dead one, never write the same object, so removing one attempt's blob
 * can never remove another's.
 */
export function freshArchiveKey(v: { organization_id: string; module_id: string; id: string }): string {
  return moduleArchiveKey(v.organization_id, v.module_id, `${v.id}-${randomBytes(6).toString('hex')}`);
}

async function removeBlob(deps: Deps, key: string): Promise<void> {
  await deps.blobs.delete(key).catch((err) => deps.logger.warn({ err, key }, 'blob left behind; the registry upkeep will remove it'));
}

/** Queues ingestion for a version whose blob is already stored; call in the transaction that stored it. Returns the job id. */
export async function enqueueIngestion(db: Queryable, versionId: string, now: Date): Promise<string> {
  return enqueue(db, INGEST_MODULE_VERSION, { versionId }, now, now);
}

/**
 * Puts the archive for a version that is pending (or being cloned) into the blob store and
 * queues its ingestion (status `ingesting`). The same limits as an upload apply while the bytes
 * stream: over TERRACE_MAX_ARCHIVE_BYTES marks the version errored and throws 413. A version
 * that is gone throws 404; one in another state (already taking an archive, published) 409.
 * A store failure throws and leaves the version as it was.
 */
export async function submitArchive(deps: Deps, versionId: string, body: Readable, opts: { contentLength?: number | null } = {}): Promise<void> {
  const v = await getVersionWithOrg(deps.db, versionId);
  if (!v) {
    body.resume();
    throw notFound(`module version ${versionId} does not exist`);
  }
  if (!SUBMITTABLE.includes(v.status) || v.blob_key !== null) {
    body.resume();
    throw conflict(`module version ${v.version} is ${v.status}: only a pending version takes an archive`);
  }
  const max = deps.config.maxArchiveBytes;
  const refuse = async (msg: string): Promise<never> => {
    await transitionVersion(deps.db, v.id, SUBMITTABLE, { status: 'errored', error: msg, updated_at: rfc3339(deps.clock.now()) }, { blobKey: null });
    throw payloadTooLarge(msg);
  };
  const contentLength = opts.contentLength ?? null;
  if (contentLength !== null && contentLength > max) {
    body.resume();
    return refuse(`the archive is ${contentLength} bytes, over the limit of ${max} bytes (TERRACE_MAX_ARCHIVE_BYTES)`);
  }
  const key = freshArchiveKey(v);
  let put;
  try {
    put = await deps.blobs.put(key, body, { maxBytes: max, contentType: 'application/gzip' });
  } catch (err) {
    if (err instanceof BlobTooLargeError) return refuse(`the archive is over the limit of ${max} bytes (TERRACE_MAX_ARCHIVE_BYTES)`);
    throw err;
  }
  if (contentLength !== null && put.size !== contentLength) {
    await removeBlob(deps, key);
    throw new ApiError(400, 'archive incomplete', `received ${put.size} of ${contentLength} bytes; submit the archive again`);
  }
  const now = deps.clock.now();
  const stored = await inTransaction(deps.db, async (tx) => {
    const ok = await transitionVersion(
      tx,
      v.id,
      SUBMITTABLE,
      { status: 'ingesting', error: null, blob_key: key, size: put.size, sha256: put.sha256, updated_at: rfc3339(now) },
      { blobKey: null },
    );
    if (ok) await enqueueIngestion(tx, v.id, now);
    return ok;
  });
  if (!stored) {
    await removeBlob(deps, key);
    throw conflict(`module version ${v.version} was deleted or changed while its archive was stored`);
  }
  wakeJobs(deps.db);
  deps.logger.info({ version: v.id, size: put.size, sha256: put.sha256 }, 'module archive stored; ingestion queued');
}

/**
 * Resolves when the version leaves the ingesting states (or after timeoutMs, real time), with its
 * row as it is then; undefined if the version no longer exists.
 */
export async function waitForIngestion(deps: Deps, versionId: string, timeoutMs: number): Promise<VersionRow | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await getVersionById(deps.db, versionId);
    if (!row || !INGESTING_STATUSES.includes(row.status)) return row;
    const left = deadline - Date.now();
    if (left <= 0) return row;
    // Woken at once by this process's job; another process's is seen at the next poll.
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        settled.off(versionId, done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(left, 200));
      settled.once(versionId, done);
    });
  }
}

/**
 * Runs the queued ingestion job here and now (lease, retries and failure hook as in the runner),
 * for a process that runs no background jobs and must not leave its upload to one that may never
 * come. Resolves when this attempt is over.
 */
export async function runIngestionJobNow(deps: Deps, jobId: string): Promise<void> {
  const runner = new JobRunner(deps, { [INGEST_MODULE_VERSION]: ingestJobKind }, { leaseMs: deps.config.jobLeaseSeconds * 1000 });
  await runner.runNow(jobId);
}

interface Examined {
  contents: unknown;
  warnings: string[];
  summary: string;
}

/** One pass over the stored archive validates it and collects what inspection reads; then inspection. */
async function examine(deps: Deps, v: VersionWithOrg, blobKey: string): Promise<Examined> {
  const compressedBytes = v.size ?? (await deps.blobs.stat(blobKey))?.size;
  if (compressedBytes === undefined) throw new BlobNotFoundError(blobKey);
  const collected = new Map<string, Buffer>();
  let collectedBytes = 0;
  const warnings: string[] = [];
  const report = await validateArchive(await deps.blobs.get(blobKey), {
    maxEntries: deps.config.maxArchiveEntries,
    maxUnpackedBytes: deps.config.maxArchiveUnpackedBytes,
    ratio: { compressedBytes, maxRatio: deps.config.maxArchiveRatio, ratioFloorBytes: deps.config.archiveRatioFloorBytes },
    maxCollectBytes: MAX_INSPECTED_FILE_BYTES,
    wantFile: (path, size) => wantedForInspection(path) && size <= MAX_INSPECTED_FILE_BYTES,
    onFile: (path, content) => {
      if (collectedBytes + content.length > MAX_INSPECTED_TOTAL_BYTES) {
        warnings.push(`${path} was not read: the module's files exceed ${MAX_INSPECTED_TOTAL_BYTES} bytes in all`);
        return;
      }
      collectedBytes += content.length;
      collected.set(path, content);
    },
  });
  warnings.push(...report.warnings);
  for (const f of report.files) {
    if (f.type === 'file' && wantedForInspection(f.path) && f.size > MAX_INSPECTED_FILE_BYTES) {
      warnings.push(`${f.path} was not read: it is ${f.size} bytes, over the ${MAX_INSPECTED_FILE_BYTES}-byte limit for one file`);
    }
  }
  const inspected = await inspectFiles(collected, { timeoutMs: deps.config.inspectTimeoutMs, maxHeapMb: deps.config.inspectMaxHeapMb }, warnings);
  if (inspected.warnings.length) deps.logger.warn({ version: v.id, warnings: inspected.warnings.slice(0, 20) }, 'module inspection warnings');
  return inspected;
}

/** Refuses an ingesting version: errored with the reason, then its blob removed (a crash in between leaves an orphan the upkeep removes). */
async function refuse(deps: Deps, v: Pick<VersionRow, 'id' | 'blob_key'>, reason: string): Promise<void> {
  const now = rfc3339(deps.clock.now());
  const done = await transitionVersion(deps.db, v.id, ['ingesting'], { status: 'errored', error: reason, blob_key: null, updated_at: now }, { blobKey: v.blob_key });
  if (v.blob_key && (done || !(await getVersionById(deps.db, v.id)))) await removeBlob(deps, v.blob_key);
  if (done) deps.logger.info({ version: v.id, reason }, 'module version refused');
  announce(v.id);
}

/** The registry.ingest job: validates, inspects and publishes (or refuses) one ingesting version. */
export const ingestModuleVersion: JobHandler = async (deps, payload) => {
  const id = versionIdOf(payload);
  const v = await getVersionWithOrg(deps.db, id);
  // Deleted (its blob went with it), or already published or refused: nothing to do.
  if (!v || v.status !== 'ingesting' || !v.blob_key) {
    announce(id);
    return;
  }
  const blobKey = v.blob_key;
  let examined: Examined;
  try {
    examined = await examine(deps, v, blobKey);
  } catch (err) {
    if (err instanceof ArchiveError) return refuse(deps, v, err.message);
    if (err instanceof BlobNotFoundError) {
      const now = await getVersionById(deps.db, id);
      if (!now || now.status !== 'ingesting' || now.blob_key !== blobKey) {
        announce(id);
        return;
      }
      return refuse(deps, v, 'the stored archive is missing: publish the version again');
    }
    throw err;
  }

  const published = rfc3339(deps.clock.now());
  const done = await inTransaction(deps.db, async (tx) => {
    const ok = await transitionVersion(
      tx,
      id,
      ['ingesting'],
      {
        status: 'ok',
        error: null,
        published_at: published,
        updated_at: published,
        contents: JSON.stringify(examined.contents),
        warnings: JSON.stringify([...new Set(examined.warnings)].slice(0, MAX_WARNINGS)),
        description: v.description || examined.summary || null,
      },
      { blobKey },
    );
    if (ok) await refreshModuleCache(tx, v.module_id, published);
    return ok;
  });
  if (done) {
    deps.logger.info({ version: id, size: v.size, sha256: v.sha256 }, 'registry module version published');
  } else if (!(await getVersionById(deps.db, id))) {
    // Deleted while it was being ingested: its delete removed the blob, unless it raced the read.
    await removeBlob(deps, blobKey);
  }
  announce(id);
};

/** Every attempt failed (or the process died during the last): the version says so and frees its blob. */
const ingestionFailed: JobFailureHook = async (deps, payload, job, lastError) => {
  const id = versionIdOf(payload);
  const v = await getVersionById(deps.db, id);
  if (!v || v.status !== 'ingesting') return;
  // The cause (which may name server paths) goes to the log, not to the API.
  deps.logger.error({ version: id, job: job.id, lastError }, 'module version ingestion failed for good');
  await refuse(deps, v, 'the archive could not be checked (an internal error, logged by the server): publish the version again');
};

export const ingestJobKind: JobKind = { run: ingestModuleVersion, failed: ingestionFailed };

/**
 * Repair that needs no restart, safe with several instances on one database and blob store. An
 * upload whose lease lapsed (its request's process died) loses its partial blob and goes back to
 * pending, its URL usable again until it expires. A queued ingestion needs nothing: its job row
 * resumes it once its lease lapses.
 */
export async function repairDeadUploads(deps: Deps): Promise<number> {
  const now = rfc3339(deps.clock.now());
  let resetUploads = 0;
  for (const u of await staleUploads(deps.db, now)) {
    if (!(await resetStaleUpload(deps.db, u.id, u.upload_lease_until, now))) continue;
    resetUploads++;
    if (u.blob_key) await removeBlob(deps, u.blob_key);
  }
  if (resetUploads) deps.logger.warn({ resetUploads }, 'registry upkeep: gave back the upload URLs of uploads whose process died');
  return resetUploads;
}

/**
 * Removes every blob under modules/ that no version references and that is older than the grace
 * window. A producer records its blob within moments of storing it, so a younger one may be an
 * upload or a VCS publish in flight (here or in another instance) and is left alone. Lists every
 * module archive, so it runs less often than the upload repair.
 */
export async function sweepOrphanArchives(deps: Deps): Promise<number> {
  // List first, then read the references: a blob old enough to be a candidate was recorded (if it
  // ever will be) long before the references are read.
  const cutoff = deps.clock.now().getTime() - deps.config.orphanBlobGraceSeconds * 1000;
  const candidates: string[] = [];
  for await (const blob of deps.blobs.list(MODULES_PREFIX)) {
    if (blob.lastModified.getTime() < cutoff) candidates.push(blob.key);
  }
  let orphansRemoved = 0;
  if (candidates.length) {
    const referenced = await referencedBlobKeys(deps.db);
    for (const key of candidates) {
      if (referenced.has(key)) continue;
      await deps.blobs.delete(key);
      orphansRemoved++;
    }
  }
  if (orphansRemoved) deps.logger.warn({ orphansRemoved }, 'registry upkeep: removed module archives no version references');
  return orphansRemoved;
}

export const registryJobHandlers: Record<string, JobHandler | JobKind> = {
  [INGEST_MODULE_VERSION]: ingestJobKind,
  [REGISTRY_UPKEEP]: async (deps) => {
    await repairDeadUploads(deps);
  },
  [REGISTRY_ORPHAN_SWEEP]: async (deps) => {
    await sweepOrphanArchives(deps);
  },
};

/** The registry's recurring jobs: upload repair every upkeepMs, the orphan sweep once per grace window. */
export function registryRecurringJobs(config: Pick<Deps['config'], 'registryUpkeepIntervalSeconds' | 'orphanBlobGraceSeconds'>): RecurringJob[] {
  return [
    { kind: REGISTRY_UPKEEP, everyMs: config.registryUpkeepIntervalSeconds * 1000, payload: null },
    { kind: REGISTRY_ORPHAN_SWEEP, everyMs: config.orphanBlobGraceSeconds * 1000, payload: null },
  ];
}
