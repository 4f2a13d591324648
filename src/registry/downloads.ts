import type { Db } from '../db/index.js';
import type { Logger } from '../logger.js';
import { addDownloadCounts, type DownloadCount } from './store.js';

/** Counts by module id, then by UTC day (YYYY-MM-DD). */
export type CountsByModule = Map<string, Map<string, number>>;

/** What a reader adds to the rows it read: this process's counts not yet in them. */
export interface PendingCounts {
  /** One module's counts by UTC day (only the modules the read named). */
  of(moduleId: string): ReadonlyMap<string, number>;
  /** The named modules' counts summed, or every module's when the read named none. */
  total: number;
}

/** Writes one batch of counts in one transaction; returns how many rows it skipped (modules gone). */
export type DownloadWriter = (rows: DownloadCount[]) => Promise<number>;

export interface DownloadCounterOptions {
  flushMs: number;
  /** Past this many (module, day) keys pending, a flush starts at once instead of at the next tick. */
  maxKeys?: number;
}

export const DEFAULT_MAX_PENDING_KEYS = 100_000;
// A read that overlaps this many flushes in a row adds what it knows without waiting again.
const MAX_READ_ATTEMPTS = 5;

/**
 * Download counts batched in memory (issue 14). A download only increments a map, synchronously;
 * a flusher adds everything pending to the downloads table in one transaction every flushMs and
 * once more when the server closes. Each instance adds its own counts (count = count + n), so
 * several instances on one database never lose or double a download.
 *
 * What a crash (SIGKILL, power loss) loses is the counts not yet flushed: at most one interval's
 * worth, plus a flush that was failing. A failed flush puts its counts back and the next tick
 * tries again; they are never dropped while the process lives.
 *
 * Readers go through read(): the rows they read plus this process's counts not in those rows, so
 * an instance shows its own downloads at once; another instance sees them after the flush.
 */
export class DownloadCounter {
  private pending: CountsByModule = new Map();
  private pendingKeys = 0;
  /** The batch being written, until its transaction has ended. */
  private writing: CountsByModule | null = null;
  private flushing: Promise<void> | null = null;
  /** Moves when a flush starts and when it ends: a read that saw it stand still read no half-known state. */
  private epoch = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly maxKeys: number;
  /** The UTC day (YYYY-MM-DD) of the last countAt, and its number of days since the epoch. */
  private day = '';
  private dayNumber = NaN;

  /**
   * The function that writes one batch. Tests replace it (wrapping the original) to make a flush
   * fail as an unreachable store would.
   */
  writer: DownloadWriter;

  constructor(
    db: Db,
    private readonly logger: Logger,
    private readonly opts: DownloadCounterOptions,
  ) {
    this.maxKeys = opts.maxKeys ?? DEFAULT_MAX_PENDING_KEYS;
    // One statement, atomic on its own, so no transaction around it: on PostgreSQL it then runs
    // at READ COMMITTED, where INSERT ... ON CONFLICT DO UPDATE adds to a row as another
    // instance's flush left it, where SERIALIZABLE (inTransaction) would fail the whole batch on
    // any row both flushes touched and write it all again. Rows go in sorted order (toRows), so
    // two flushes lock their common rows in the same order and cannot deadlock.
    this.writer = (rows) => addDownloadCounts(db, rows);
  }

  /** Starts the periodic flush. The timer never keeps the process alive by itself. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flushOnce(), this.opts.flushMs);
    this.timer.unref();
  }

  /** Counts one download of a module at a time (on its UTC day). */
  countAt(moduleId: string, at: Date): void {
    const dayNumber = Math.floor(at.getTime() / 86_400_000);
    if (dayNumber !== this.dayNumber) {
      this.dayNumber = dayNumber;
      this.day = at.toISOString().slice(0, 10);
    }
    this.count(moduleId, this.day);
  }

  /** Counts one download of a module on a UTC day. Synchronous: no I/O on the download path. */
  count(moduleId: string, day: string): void {
    if (add(this.pending, moduleId, day, 1)) this.pendingKeys++;
    if (this.pendingKeys >= this.maxKeys && !this.flushing) void this.flushOnce();
  }

  /**
   * Writes every count pending now; resolves when that write has ended (never rejects: a failed
   * write leaves the counts pending, as at any tick). Waits for a flush in progress first.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    await this.flushOnce();
  }

  /**
   * Writes every pending count in one transaction, unless a flush is in progress (then resolves
   * with it). Never rejects: on failure the counts go back into the pending map, merged with those
   * counted meanwhile, for the next tick.
   */
  private flushOnce(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pendingKeys === 0) return Promise.resolve();
    const batch = this.pending;
    const keys = this.pendingKeys;
    this.pending = new Map();
    this.pendingKeys = 0;
    this.writing = batch;
    this.epoch++;
    const rows = toRows(batch);
    // Every step a callback: none runs before this.flushing is set, whatever the writer does.
    this.flushing = Promise.resolve()
      .then(() => this.writer(rows))
      .then(
        (skipped) => {
          if (skipped > 0) this.logger.debug({ skipped }, 'download counts of deleted modules dropped');
        },
        (err: unknown) => {
          for (const [moduleId, days] of batch) for (const [day, n] of days) if (add(this.pending, moduleId, day, n)) this.pendingKeys++;
          this.logger.warn({ err, keys, downloads: sumOf(batch) }, 'could not write download counts; kept in memory, retrying at the next flush');
        },
      )
      .finally(() => {
        this.writing = null;
        this.flushing = null;
        this.epoch++;
      });
    return this.flushing;
  }

  /**
   * Stops the periodic flush and writes what is pending (call once no request can count any more,
   * before the store closes). Counts that cannot be written then are lost: logged as an error.
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
    if (this.pendingKeys > 0) this.logger.error({ downloads: sumOf(this.pending) }, 'download counts not written at shutdown: they are lost');
  }

  /**
   * Runs a read of the downloads table and returns it with this process's counts that the read
   * did not see. A flush overlapping the read could be in its rows or not, so such a read is
   * repeated once the flush has ended (bounded; the last attempt adds the batch being written).
   * moduleIds: the modules the read is about; none: every module (then only the total).
   */
  async read<T>(query: () => Promise<T>, moduleIds?: readonly string[]): Promise<{ rows: T; pending: PendingCounts }> {
    for (let attempt = 1; ; attempt++) {
      const epoch = this.epoch;
      const busy = this.flushing;
      const rows = await query();
      if (!busy && epoch === this.epoch) return { rows, pending: snapshot([this.pending], moduleIds) };
      if (attempt >= MAX_READ_ATTEMPTS) return { rows, pending: snapshot(this.writing ? [this.pending, this.writing] : [this.pending], moduleIds) };
      await this.flushing;
    }
  }
}

/** Adds n to a key; true when the key is new. */
function add(counts: CountsByModule, moduleId: string, day: string, n: number): boolean {
  let days = counts.get(moduleId);
  if (!days) counts.set(moduleId, (days = new Map()));
  const had = days.get(day);
  days.set(day, (had ?? 0) + n);
  return had === undefined;
}

function sumOf(counts: CountsByModule): number {
  let n = 0;
  for (const days of counts.values()) for (const c of days.values()) n += c;
  return n;
}

/** Rows in (module, day) order, so concurrent flushes of several instances lock rows in one order. */
function toRows(counts: CountsByModule): DownloadCount[] {
  const rows: DownloadCount[] = [];
  for (const [module_id, days] of counts) for (const [day, count] of days) rows.push({ module_id, day, count });
  return rows.sort((a, b) => (a.module_id < b.module_id ? -1 : a.module_id > b.module_id ? 1 : a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
}

/** A copy taken now, so later counts or flushes do not change what the reader adds. */
function snapshot(sources: CountsByModule[], moduleIds: readonly string[] | undefined): PendingCounts {
  const empty: ReadonlyMap<string, number> = new Map();
  if (!moduleIds) return { of: () => empty, total: sources.reduce((n, s) => n + sumOf(s), 0) };
  const merged: CountsByModule = new Map();
  for (const s of sources) {
    for (const id of new Set(moduleIds)) for (const [day, n] of s.get(id) ?? []) add(merged, id, day, n);
  }
  return { of: (moduleId) => merged.get(moduleId) ?? empty, total: sumOf(merged) };
}
