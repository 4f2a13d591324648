import { randomUUID } from 'node:crypto';
import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import { rfc3339 } from '../clock.js';
import { skipLocked } from '../db/dialect.js';
import type { Db, Queryable } from '../db/index.js';
import type { Database, JobsTable } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { newId } from '../ids.js';

export type JobRow = Selectable<JobsTable>;

/** Does the work of one job. Throwing reschedules it (with backoff); PermanentJobError gives up at once. */
export type JobHandler = (deps: Deps, payload: unknown, job: JobRow) => Promise<void>;

/** A failure that retrying cannot fix: the job is parked with its error instead of rescheduled. */
export class PermanentJobError extends Error {}

/**
 * Tells a job's domain that the job failed for good (a permanent error, its last attempt, or a
 * process that died during its last attempt), so what waits on the job can say so instead of
 * waiting for ever. Runs once per failed job, after the row is marked failed.
 */
export type JobFailureHook = (deps: Deps, payload: unknown, job: JobRow, lastError: string) => Promise<void>;

/** A job kind: its handler and, for work something waits on, what to do when it fails for good. */
export interface JobKind {
  run: JobHandler;
  failed?: JobFailureHook;
}

/** A failed job keeps its row (and last_error) for operators; this run_at marks it as done failing. */
export const FAILED_RUN_AT = '9999-12-31T23:59:59.999Z';

export interface JobRunnerOptions {
  /** How long a claim holds before another runner may take the job over (a crashed holder). */
  leaseMs?: number;
  /** The wait before the next poll after one that ran a job. */
  pollMs?: number;
  /**
   * The longest wait between polls while nothing is due: each poll that finds nothing doubles the
   * wait, from pollMs up to this, never past the earliest time a job in the table falls due.
   */
  idlePollMs?: number;
  maxAttempts?: number;
  /** Delay before attempt n+1 after attempt n (n from 1) failed. */
  backoffMs?: (attempt: number) => number;
  /** Kinds (among the handlers) that repeat; see RecurringJob and ensureRecurring(). */
  recurring?: RecurringJob[];
}

const DEFAULTS = {
  recurring: [] as RecurringJob[],
  leaseMs: 60_000,
  pollMs: 250,
  idlePollMs: 2000,
  maxAttempts: 8,
  backoffMs: (attempt: number) => Math.min(2 ** (attempt - 1) * 1000, 10 * 60_000),
};

/**
 * Background work is a row in `jobs`, written in the same transaction as the change that needs
 * it, so a crash cannot lose it. Runs at runAt or later, by whichever runner claims it first.
 */
export async function enqueue(db: Queryable, kind: string, payload: unknown, runAt: Date, now: Date = runAt): Promise<string> {
  const id = newId('job');
  await db
    .insertInto('jobs')
    .values({ id, kind, payload: JSON.stringify(payload ?? null), run_at: rfc3339(runAt), locked_until: null, last_error: null, created_at: rfc3339(now), unique_key: null })
    .execute();
  return id;
}

/**
 * Work that repeats (retention sweeps): one row per kind that is never deleted. When a run
 * finishes, or fails for good, the runner puts the row back to run again everyMs later with
 * the initial payload, so a sweep can neither pile up nor be parked forever.
 */
export interface RecurringJob {
  kind: string;
  everyMs: number;
  /** The payload each run starts from. */
  payload: unknown;
}

/**
 * Records a job's progress in its own row, so the attempt that takes over after a crash or a
 * failure resumes from there (the handler receives this payload). Call it in the transaction
 * whose work it records, so progress and work commit together.
 */
export async function saveJobProgress(db: Queryable, jobId: string, payload: unknown): Promise<void> {
  await db.updateTable('jobs').set({ payload: JSON.stringify(payload ?? null) }).where('id', '=', jobId).execute();
}

/**
 * A job that exists at most once (its kind is its unique key), run at runAt. If its row is there
 * already and no runner holds it (waiting out a backoff, or failed for good), it is given a fresh
 * set of attempts from runAt and keeps its payload, so saved progress carries over; a held row
 * is left to its holder (or to whoever takes over once the lease lapses).
 */
export async function enqueueOnce(db: Queryable, kind: string, payload: unknown, runAt: Date): Promise<void> {
  const at = rfc3339(runAt);
  await db
    .insertInto('jobs')
    .values({ id: newId('job'), kind, payload: JSON.stringify(payload ?? null), run_at: at, locked_until: null, last_error: null, created_at: at, unique_key: kind })
    .onConflict((oc) =>
      oc
        .column('unique_key')
        .doUpdateSet({ run_at: at, attempts: 0 })
        .where((eb) => eb.or([eb('jobs.locked_until', 'is', null), eb('jobs.locked_until', '<', at)])),
    )
    .execute();
}

// Runners in this process, by the database they serve: an enqueue here wakes them at once
// instead of at their next poll. Only a hint; the rows are the truth.
const wakers = new WeakMap<Db, Set<() => void>>();

/** Call after the transaction that enqueued a job has committed. */
export function wakeJobs(db: Db): void {
  for (const wake of wakers.get(db) ?? []) wake();
}

export class JobRunner {
  private readonly opts: typeof DEFAULTS;
  private readonly kinds: Record<string, JobKind>;
  private started = false;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private again = false;
  /** The current wait between polls that find nothing (0 after one that ran a job). */
  private idleMs = 0;
  private readonly wake = () => this.schedule(0);

  constructor(
    private readonly deps: Deps,
    handlers: Record<string, JobHandler | JobKind>,
    opts: JobRunnerOptions = {},
  ) {
    this.opts = { ...DEFAULTS, ...opts };
    this.kinds = Object.fromEntries(Object.entries(handlers).map(([k, h]) => [k, typeof h === 'function' ? { run: h } : h]));
  }

  /**
   * Makes sure each recurring kind has its one row: created (first run everyMs from now) unless
   * it exists, which the unique key decides even when several processes start at once. A row
   * scheduled further out than everyMs from now (the interval was shortened) is brought in.
   * Call at start-up, whether or not this process runs jobs.
   */
  async ensureRecurring(): Promise<void> {
    for (const r of this.opts.recurring) {
      const now = this.deps.clock.now();
      const next = rfc3339(now.getTime() + r.everyMs);
      await this.deps.db
        .insertInto('jobs')
        .values({
          id: newId('job'),
          kind: r.kind,
          payload: JSON.stringify(r.payload ?? null),
          run_at: next,
          locked_until: null,
          last_error: null,
          created_at: rfc3339(now),
          unique_key: r.kind,
        })
        .onConflict((oc) => oc.column('unique_key').doNothing())
        .execute();
      await this.deps.db.updateTable('jobs').set({ run_at: next }).where('unique_key', '=', r.kind).where('run_at', '>', next).execute();
    }
  }

  /**
   * Polls right after an enqueue in this process, pollMs after a poll that ran a job, and
   * otherwise at the earliest time a job falls due or after a wait that doubles up to idlePollMs,
   * whichever comes first: an idle runner costs the store a few statements every idlePollMs
   * rather than every pollMs, and a job another instance enqueued starts within idlePollMs.
   */
  start(): void {
    if (this.started) return;
    this.started = true;
    let set = wakers.get(this.deps.db);
    if (!set) wakers.set(this.deps.db, (set = new Set()));
    set.add(this.wake);
    this.schedule(0);
  }

  /** Stops polling and waits for the job in flight to finish. */
  async stop(): Promise<void> {
    this.started = false;
    wakers.get(this.deps.db)?.delete(this.wake);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.inFlight;
  }

  /** Runs every job that is due now, one after another; resolves with how many ran. For tests and start-up. */
  async runDue(): Promise<number> {
    await this.failExhausted();
    let n = 0;
    for (;;) {
      const job = await this.claim();
      if (!job) return n;
      await this.run(job);
      n++;
    }
  }

  /**
   * Claims the job with this id, if it is due and no live runner holds it, and runs it here, as
   * runDue would (lease, retries, failure hook). For a request that queued durable work and wants
   * it done before answering in a process that runs no background jobs. False if not claimable.
   */
  async runNow(id: string): Promise<boolean> {
    const job = await this.claim(id);
    if (!job) return false;
    await this.run(job);
    return true;
  }

  private schedule(delayMs: number): void {
    if (!this.started) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.again = false;
      this.inFlight = this.pass().then(
        (next) => {
          this.inFlight = null;
          this.schedule(this.again ? 0 : next);
        },
        (err) => {
          this.deps.logger.error({ err }, 'job runner pass failed');
          this.inFlight = null;
          this.schedule(this.again ? 0 : this.opts.pollMs);
        },
      );
    }, delayMs);
    this.timer.unref?.();
  }

  /** Runs what is due; resolves with the wait before the next poll. */
  private async pass(): Promise<number> {
    if ((await this.runDue()) > 0) {
      this.idleMs = 0;
      return this.opts.pollMs;
    }
    this.idleMs = Math.min(Math.max(this.opts.pollMs, this.idleMs * 2), Math.max(this.opts.pollMs, this.opts.idlePollMs));
    const next = await this.nextDueAt();
    if (next === undefined) return this.idleMs;
    const until = next - this.deps.clock.now().getTime();
    // Due already yet not claimed (a race, a row failExhausted left): no sooner than pollMs.
    return until <= 0 ? this.opts.pollMs : Math.min(this.idleMs, until);
  }

  /**
   * The earliest time (ms since the epoch) a job of these kinds can be taken: its run_at, or its
   * lease's end if a runner holds it past that (a holder that died lets it go then). Undefined
   * when there is none.
   */
  private async nextDueAt(): Promise<number | undefined> {
    const kinds = Object.keys(this.kinds);
    if (kinds.length === 0) return undefined;
    const row = await this.deps.db
      .selectFrom('jobs')
      .select(sql<string | null>`min(case when locked_until is not null and locked_until > run_at then locked_until else run_at end)`.as('next'))
      .where('kind', 'in', kinds)
      .where('run_at', '!=', FAILED_RUN_AT)
      .executeTakeFirst();
    const next = row?.next ? Date.parse(row.next) : NaN;
    return Number.isNaN(next) ? undefined : next;
  }

  /**
   * Takes the oldest due job no live runner holds. The conditional UPDATE is the lock: of several
   * runners (processes or instances) racing for one row, exactly one sees it change. On
   * PostgreSQL the candidate is chosen FOR UPDATE SKIP LOCKED in the same statement, so runners
   * on several instances take different jobs instead of all racing for the oldest.
   *
   * Each claim writes a fresh claim_token, the claim's fencing token: whatever the runner writes
   * about the job afterwards (done, failed, a longer lease) names it, so a runner whose lease
   * lapsed and whose job another runner took over writes nothing.
   */
  private async claim(onlyId?: string): Promise<JobRow | undefined> {
    const kinds = Object.keys(this.kinds);
    if (kinds.length === 0) return undefined;
    const db = this.deps.db;
    for (let tries = 0; tries < 5; tries++) {
      const nowDate = this.deps.clock.now();
      const now = rfc3339(nowDate);
      const free = (eb: ExpressionBuilder<Database, 'jobs'>) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]);
      const candidate = skipLocked(
        db,
        db
          .selectFrom('jobs')
          .select('id')
          .where('kind', 'in', kinds)
          .where('run_at', '<=', now)
          .where('attempts', '<', this.opts.maxAttempts)
          .where(free)
          .$if(onlyId !== undefined, (q) => q.where('id', '=', onlyId!))
          .orderBy('run_at')
          .orderBy('created_at')
          .limit(1),
      );
      const claimed = await db
        .updateTable('jobs')
        .set({ locked_until: rfc3339(nowDate.getTime() + this.opts.leaseMs), attempts: sql<number>`attempts + 1`, claim_token: randomUUID() })
        .where('id', '=', candidate)
        .where(free)
        .returningAll()
        .executeTakeFirst();
      if (claimed) return claimed;
      // Nothing claimed: nothing due, or another runner took the candidate first.
      const due = await candidate.executeTakeFirst();
      if (!due) return undefined;
    }
    return undefined;
  }

  /** The job's row, only while the claim job was read under still holds it (or, unclaimed, nobody claimed it since). */
  private held(job: JobRow) {
    return (eb: ExpressionBuilder<Database, 'jobs'>) =>
      eb.and([eb('id', '=', job.id), job.claim_token === null ? eb('claim_token', 'is', null) : eb('claim_token', '=', job.claim_token)]);
  }

  private async run(job: JobRow): Promise<void> {
    const log = this.deps.logger.child({ job: job.id, kind: job.kind, attempt: job.attempts });
    let lease = job.locked_until!;
    // Long jobs extend their lease so no other runner takes them over while they are alive.
    const heartbeat = setInterval(() => {
      const next = rfc3339(this.deps.clock.now().getTime() + this.opts.leaseMs);
      this.deps.db
        .updateTable('jobs')
        .set({ locked_until: next })
        .where(this.held(job))
        .where('locked_until', '=', lease)
        .executeTakeFirst()
        .then((r) => {
          if (Number(r.numUpdatedRows) === 1) lease = next;
        })
        .catch((err) => log.warn({ err }, 'could not extend a job lease'));
    }, Math.max(1000, Math.floor(this.opts.leaseMs / 3)));
    heartbeat.unref?.();
    try {
      const handler = this.kinds[job.kind]?.run;
      if (!handler) throw new PermanentJobError(`no handler for job kind ${job.kind}`);
      let payload: unknown;
      try {
        payload = JSON.parse(job.payload);
      } catch {
        const recurring = this.recurringOf(job);
        if (!recurring) throw new PermanentJobError('the job payload is not JSON');
        log.warn('recurring job payload is not JSON; starting a fresh run');
        payload = recurring.payload;
      }
      await handler(this.deps, payload, job);
      clearInterval(heartbeat);
      // A job's writes (a publish from git, say) are seen by this instance's caches at once.
      await this.deps.generations.sync();
      const recurring = this.recurringOf(job);
      const recorded = recurring
        ? await this.reschedule(job, recurring, null, true)
        : Number((await this.deps.db.deleteFrom('jobs').where(this.held(job)).executeTakeFirst()).numDeletedRows) === 1;
      if (recorded) log.debug('job done');
      else log.warn('job done after its lease lapsed and another runner took it over: its completion is not recorded');
    } catch (err) {
      clearInterval(heartbeat);
      const permanent = err instanceof PermanentJobError || job.attempts >= this.opts.maxAttempts;
      const message = err instanceof Error ? err.message : String(err);
      const recurring = this.recurringOf(job);
      if (permanent && recurring) {
        // Its saved progress stays: the next run resumes this one.
        if (await this.reschedule(job, recurring, message, false)) log.error({ err }, 'recurring job failed for good this time; its next run resumes it');
        else log.warn({ err }, 'recurring job failed after another runner took it over: not recorded');
        return;
      }
      const runAt = rfc3339(this.deps.clock.now().getTime() + this.opts.backoffMs(job.attempts));
      const res = await this.deps.db
        .updateTable('jobs')
        .set({
          last_error: message.slice(0, 2000),
          locked_until: null,
          claim_token: null,
          run_at: runAt,
          ...(permanent ? { attempts: Math.max(job.attempts, this.opts.maxAttempts) } : {}),
        })
        .where(this.held(job))
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) {
        log.warn({ err }, 'job failed after its lease lapsed and another runner took it over: its failure is not recorded');
        return;
      }
      if (permanent) await this.failExhausted(job.id);
      else log.warn({ err, retryAt: runAt }, 'job failed; it will be retried');
    }
  }

  /**
   * Fails for good every job that has used its attempts and is not held (or only the one given):
   * its last run threw for good, or its process died during the last attempt, which nothing else
   * would ever notice. Each is logged at error with its id, kind and last error, its row keeps
   * that error and is marked failed (FAILED_RUN_AT), and its kind's failure hook runs, once: the
   * conditional UPDATE decides which runner does it. A recurring job is put back for its next
   * run instead, as after any failure of one.
   */
  private async failExhausted(onlyId?: string): Promise<void> {
    const kinds = Object.keys(this.kinds);
    if (kinds.length === 0) return;
    const now = rfc3339(this.deps.clock.now());
    const rows = await this.deps.db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', 'in', kinds)
      .where('attempts', '>=', this.opts.maxAttempts)
      .where('run_at', '!=', FAILED_RUN_AT)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
      .$if(onlyId !== undefined, (q) => q.where('id', '=', onlyId!))
      .limit(100)
      .execute();
    for (const job of rows) {
      const lastError = job.last_error ?? 'the process running its last attempt stopped before it finished';
      const recurring = this.recurringOf(job);
      if (recurring) {
        if (await this.reschedule(job, recurring, lastError, false)) {
          this.deps.logger.error({ job: job.id, kind: job.kind, lastError }, 'recurring job failed for good this time; its next run resumes it');
        }
        continue;
      }
      const res = await this.deps.db
        .updateTable('jobs')
        .set({ run_at: FAILED_RUN_AT, locked_until: null, last_error: lastError })
        .where('id', '=', job.id)
        .where('run_at', '=', job.run_at)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) continue;
      this.deps.logger.error(
        { job: job.id, kind: job.kind, attempts: job.attempts, lastError },
        'job failed permanently: it will not be retried; its row keeps the last error',
      );
      const hook = this.kinds[job.kind]?.failed;
      if (!hook) continue;
      let payload: unknown = null;
      try {
        payload = JSON.parse(job.payload);
      } catch {
        // The hook gets null and decides.
      }
      try {
        await hook(this.deps, payload, { ...job, run_at: FAILED_RUN_AT, last_error: lastError }, lastError);
      } catch (err) {
        this.deps.logger.error({ err, job: job.id, kind: job.kind }, 'the failure hook of a failed job failed');
      }
    }
  }

  private recurringOf(job: JobRow): RecurringJob | undefined {
    return job.unique_key === job.kind ? this.opts.recurring.find((r) => r.kind === job.kind) : undefined;
  }

  /**
   * Puts a recurring job's row back for its next run, attempts counted afresh: after a finished
   * run with the initial payload, after a failed one with the progress it saved. false when the
   * row has moved on (another runner claimed it since job was read).
   */
  private async reschedule(job: JobRow, r: RecurringJob, lastError: string | null, fresh: boolean): Promise<boolean> {
    const next = rfc3339(this.deps.clock.now().getTime() + r.everyMs);
    const res = await this.deps.db
      .updateTable('jobs')
      .set({
        run_at: next,
        attempts: 0,
        locked_until: null,
        claim_token: null,
        last_error: lastError?.slice(0, 2000) ?? null,
        ...(fresh ? { payload: JSON.stringify(r.payload ?? null) } : {}),
      })
      .where(this.held(job))
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }
}
