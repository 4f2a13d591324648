import type { Logger } from '../logger.js';
import type { Db, Queryable } from './index.js';

/**
 * What in-memory caches are built from, by generation. Triggers (migration 0017) bump a
 * generation in the store in the same transaction as any write to the tables behind it, so the
 * store is the one truth every instance reads:
 *
 * - this instance reads the generations again right after each of its own writes (every API
 *   request that is not a GET or HEAD, every committed transaction, every background job), so
 *   what it caches is never stale after a write of its own has returned;
 * - every instance also reads them every TERRACE_CACHE_SYNC_MS, which bounds how long a write
 *   made by another instance can go unseen here.
 *
 * A cache entry remembers the local generation it was read under and counts only while that is
 * still current. The generation is taken before the read: an entry read while a write was
 * committing carries the generation from before the write, and the sync that follows the
 * write's commit retires it.
 */
export type GenerationName = 'identity' | 'registry';

const NAMES: GenerationName[] = ['identity', 'registry'];

export class Generations {
  /** Local counters: move on whenever the store's value is seen to change. */
  private readonly local: Record<GenerationName, number> = { identity: 0, registry: 0 };
  private readonly seen: Record<GenerationName, string | undefined> = { identity: undefined, registry: undefined };
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {
    dbGenerations.set(db, this);
  }

  current(name: GenerationName): number {
    return this.local[name];
  }

  /**
   * Reads the store's generations and retires caches whose generation moved. Resolves after a
   * read that began after this call: concurrent callers share at most one extra read.
   */
  sync(): Promise<void> {
    if (!this.running) {
      this.running = this.read().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running.then(
      () => {
        this.queued = null;
        return this.sync();
      },
      () => {
        this.queued = null;
        return this.sync();
      },
    );
    return this.queued;
  }

  /** Drops every cached entry now (tests, and a store that cannot be read). */
  retireAll(): void {
    for (const n of NAMES) this.local[n]++;
  }

  private async read(): Promise<void> {
    let rows: { name: string; value: number | string }[];
    try {
      rows = await this.db.selectFrom('cache_generations').select(['name', 'value']).execute();
    } catch (err) {
      // Not knowing whether others wrote means not trusting what is cached.
      this.retireAll();
      this.logger.warn({ err }, 'could not read the cache generations; caches dropped');
      return;
    }
    for (const r of rows) {
      const name = r.name as GenerationName;
      if (!(name in this.local)) continue;
      const value = String(r.value);
      if (this.seen[name] !== value) {
        this.seen[name] = value;
        this.local[name]++;
      }
    }
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sync(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    dbGenerations.delete(this.db);
  }
}

const dbGenerations = new WeakMap<object, Generations>();

/** After a transaction on db commits: this instance's caches see what it wrote (db/index.ts inTransaction). */
export function syncAfterCommit(db: Queryable): Promise<void> | undefined {
  return dbGenerations.get(db)?.sync();
}

interface Entry<V> {
  value: V;
  generation: number;
  expires: number;
  /** What sizeOf said of value (0 without a byte budget). */
  bytes: number;
}

/** A bound on what a cache's entries weigh together, for values whose size varies widely. */
export interface ByteBudget<V> {
  maxBytes: number;
  /** About how many bytes a value holds (its strings' lengths, say); read once, when it is stored. */
  sizeOf(value: V): number;
}

/**
 * A bounded map whose entries count only while their generation is current (and, with a TTL,
 * until they expire). Oldest entries go first when it is full, or when a byte budget is given
 * and the entries weigh more; maxEntries 0 caches nothing, nor does a value over the budget.
 */
export class GenerationCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  private bytes = 0;

  constructor(
    private readonly generations: Generations,
    private readonly name: GenerationName,
    private readonly maxEntries: number,
    private readonly ttlMs = 0,
    /** Up to this share of ttlMs is taken off each entry's lifetime at random. */
    private readonly ttlJitter = 0,
    private readonly budget?: ByteBudget<V>,
  ) {}

  /** Take this before reading what will be cached, and hand it to set(). */
  generation(): number {
    return this.generations.current(this.name);
  }

  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.generation !== this.generations.current(this.name) || (this.ttlMs > 0 && performance.now() > e.expires)) {
      this.delete(key);
      return undefined;
    }
    return e.value;
  }

  /**
   * The entry under the current generation even if its lifetime has passed (expired says so):
   * for serving a stale copy while a fresh one is made.
   */
  peek(key: K): { value: V; expired: boolean } | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.generation !== this.generations.current(this.name)) {
      this.delete(key);
      return undefined;
    }
    return { value: e.value, expired: this.ttlMs > 0 && performance.now() > e.expires };
  }

  /** Stores value if nothing it was read from has changed since generation was taken. */
  set(key: K, value: V, generation: number): void {
    if (this.maxEntries === 0 || generation !== this.generations.current(this.name)) return;
    const bytes = this.budget ? this.budget.sizeOf(value) : 0;
    if (this.budget && bytes > this.budget.maxBytes) return;
    this.delete(key);
    while (this.entries.size > 0 && (this.entries.size >= this.maxEntries || (this.budget && this.bytes + bytes > this.budget.maxBytes))) {
      this.delete(this.entries.keys().next().value as K);
    }
    this.entries.set(key, { value, generation, expires: this.ttlMs > 0 ? performance.now() + this.ttlMs * (1 - Math.random() * this.ttlJitter) : 0, bytes });
    this.bytes += bytes;
  }

  delete(key: K): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the entries weigh together by the budget's sizeOf (0 without a budget). */
  get weight(): number {
    return this.bytes;
  }
}

/** One cache per running server (tests run many in one process): created on first use from its deps. */
export function perServer<D extends object, C>(create: (deps: D) => C): (deps: D) => C {
  const caches = new WeakMap<D, C>();
  return (deps) => {
    let c = caches.get(deps);
    if (!c) caches.set(deps, (c = create(deps)));
    return c;
  };
}
