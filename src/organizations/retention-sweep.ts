import { deleteRecordedBlobs, drainBlobDeletions, recordBlobDeletions } from '../blobs/deletions.js';
import { rfc3339 } from '../clock.js';
import { inTransaction, type Tx } from '../db/index.js';
import type { Deps } from '../deps.js';
import { saveJobProgress, type JobHandler, type RecurringJob } from '../jobs/runner.js';
import { effectiveDataRetentionPolicy } from './retention.js';
import { nextOrganizationId } from './store.js';

/** The recurring job that applies every organization's data retention policy. */
export const RETENTION_SWEEP = 'retention.sweep';

export interface RetentionPurgeRequest {
  organizationId: string;
  /** RFC 3339: remove what was created before this instant. */
  olderThan: string;
  /** Remove at most this many records (with what hangs off them) in this call. */
  limit: number;
}

export interface RetentionPurgeBatch {
  /** Rows removed, by what they are: { 'state-versions': 3, 'state-version-outputs': 12 }. */
  removed: Record<string, number>;
  /** Ids of the records removed (at most limit); a sample of them is logged. */
  ids: string[];
  /** Blobs the removed rows pointed at. The sweep deletes them once the transaction commits. */
  blobKeys: string[];
  /** Nothing of this participant's in the organization is older than the cutoff any more. */
  done: boolean;
}

/**
 * A domain that keeps data a retention policy covers (state versions now; configuration
 * versions, plan JSON and run-task outcome bodies as they land) registers one at start-up. It
 * deletes only its own rows, in the transaction it is given, and never the record a workspace
 * still relies on (its current state version). The sweep does the rest: which organizations,
 * what cutoff, batches, blobs, progress and logging.
 */
export interface RetentionParticipant {
  /** Names the participant in logs; unique. */
  name: string;
  purge(tx: Tx, req: RetentionPurgeRequest): Promise<RetentionPurgeBatch>;
}

const participants = new Map<string, RetentionParticipant>();

export function registerRetentionParticipant(p: RetentionParticipant): void {
  participants.set(p.name, p);
}

/**
 * Data kept for a fixed time whatever an organization's policy says (VCS events: 10 days). Each
 * sweep attempt calls purge first; it deletes in its own small transactions and must be safe to
 * repeat. A failure is logged and left to the next sweep: it never holds up the policy's work.
 */
export interface FixedRetention {
  name: string;
  purge(deps: Deps): Promise<void>;
}

const fixedRetentions = new Map<string, FixedRetention>();

export function registerFixedRetention(f: FixedRetention): void {
  fixedRetentions.set(f.name, f);
}

/** What the sweep's job row carries between attempts: the run in progress, if any. */
interface SweepPayload {
  run: RunProgress | null;
}

interface RunProgress {
  startedAt: string;
  /** Organizations are walked in id order; every one up to this id is done. */
  after: string | null;
  /** The organization being purged when the last attempt stopped. */
  org: OrgProgress | null;
  organizations: number;
  removed: Record<string, number>;
}

interface OrgProgress {
  id: string;
  days: number;
  cutoff: string;
  removed: Record<string, number>;
  sample: string[];
}

const DAY_MS = 24 * 3600 * 1000;
const SAMPLE_SIZE = 20;

export function retentionSweepJob(everyMs: number): RecurringJob {
  return { kind: RETENTION_SWEEP, everyMs, payload: { run: null } satisfies SweepPayload };
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

/**
 * One run: every organization whose effective policy is delete-older has what is older than
 * (run start − N days) removed, participant by participant, in batches of
 * TERRACE_RETENTION_BATCH_SIZE. Each batch commits its rows, its blob deletion records and the
 * run's progress together, so an attempt after a crash resumes where the last one stopped and
 * logs the whole organization once.
 */
export const sweepRetention: JobHandler = async (deps, payload, job) => {
  // Blobs of batches whose rows went but whose blob deletes did not finish (a crash, a failure).
  await drainBlobDeletions(deps);
  for (const f of fixedRetentions.values()) {
    try {
      await f.purge(deps);
    } catch (err) {
      deps.logger.error({ err: (err as Error).message, what: f.name }, 'fixed retention purge failed; the next sweep retries');
    }
  }
  const run: RunProgress = (payload as SweepPayload | null)?.run ?? {
    startedAt: rfc3339(deps.clock.now()),
    after: null,
    org: null,
    organizations: 0,
    removed: {},
  };
  for (;;) {
    if (!run.org) {
      const id = await nextOrganizationId(deps.db, run.after);
      if (id === undefined) break;
      const policy = await effectiveDataRetentionPolicy(deps.db, deps.config, id);
      if (!policy || policy.days === null) {
        run.after = id;
        continue;
      }
      const cutoff = rfc3339(Date.parse(run.startedAt) - policy.days * DAY_MS);
      run.org = { id, days: policy.days, cutoff, removed: {}, sample: [] };
    }
    const org = run.org;
    await purgeOrganization(deps, job.id, run, org);
    if (Object.keys(org.removed).length > 0) {
      deps.logger.info(
        { organization: org.id, olderThanDays: org.days, createdBefore: org.cutoff, removed: org.removed, sample: org.sample },
        'data retention: removed data older than the policy keeps',
      );
      run.organizations++;
      addCounts(run.removed, org.removed);
    }
    run.after = org.id;
    run.org = null;
    await saveJobProgress(deps.db, job.id, { run } satisfies SweepPayload);
  }
  deps.logger.info({ startedAt: run.startedAt, organizations: run.organizations, removed: run.removed }, 'data retention sweep finished');
};

async function purgeOrganization(deps: Deps, jobId: string, run: RunProgress, org: OrgProgress): Promise<void> {
  const limit = deps.config.retentionBatchSize;
  for (const p of participants.values()) {
    for (;;) {
      // PostgreSQL may run the transaction again: each attempt counts from where the batch began.
      const before = { removed: { ...org.removed }, sample: [...org.sample] };
      const batch = await inTransaction(deps.db, async (tx) => {
        org.removed = { ...before.removed };
        org.sample = [...before.sample];
        const b = await p.purge(tx, { organizationId: org.id, olderThan: org.cutoff, limit });
        if (b.ids.length === 0 && b.blobKeys.length === 0) return b;
        addCounts(org.removed, b.removed);
        for (const id of b.ids) if (org.sample.length < SAMPLE_SIZE) org.sample.push(id);
        await recordBlobDeletions(tx, b.blobKeys, deps.clock.now());
        await saveJobProgress(tx, jobId, { run } satisfies SweepPayload);
        return b;
      });
      await deleteRecordedBlobs(deps, batch.blobKeys);
      if (batch.done || batch.ids.length === 0) break;
    }
  }
}
