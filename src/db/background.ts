import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { Database } from './schema.js';

/**
 * A second connection to the SQLite file, in a worker thread, for writes that take a while and
 * that no request waits for: the download counts' flush (registry/downloads.ts). better-sqlite3
 * runs every statement on the calling thread, so on the main connection such a write holds up
 * every request for as long as it runs (a flush of a busy quarter-second upserts thousands of
 * rows: 10-30 ms, a WAL checkpoint included, four times a second). Here it runs beside them.
 *
 * SQLite allows one writer at a time: a write here waits (SQLite's busy timeout, in the worker)
 * while the main connection writes, and a write there waits while one here runs. Transactions on
 * the main connection take the write lock when they begin (BEGIN IMMEDIATE, db/index.ts), so a
 * commit here never invalidates what one of them has read.
 *
 * Statements are compiled by Kysely as on the main connection (SQL stays in the stores) and sent
 * to the worker with their parameters; one at a time, like Kysely's own SQLite driver.
 */

/** How long one statement may take in the worker before it is stopped (and started again on the next). */
const STATEMENT_TIMEOUT_MS = 60_000;
/** Prepared statements the worker keeps, by SQL text. */
const WORKER_STATEMENTS = 100;

// Inline so it runs the same from TypeScript sources and from the bundle (as registry/inspect does).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driverPath);
const toSqlite = (v) => (ArrayBuffer.isView(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v);
let db;
try {
  db = new Database(workerData.file, { fileMustExist: true, timeout: workerData.busyTimeoutMs });
  db.pragma('foreign_keys = ON');
  db.pragma('synchronous = NORMAL');
} catch (err) {
  parentPort.postMessage({ id: 0, error: { message: String((err && err.message) || err), code: err && err.code } });
  process.exit(1);
}
const statements = new Map();
function prepare(sql) {
  let stmt = statements.get(sql);
  if (stmt) statements.delete(sql);
  else {
    stmt = db.prepare(sql);
    if (statements.size >= workerData.maxStatements) statements.delete(statements.keys().next().value);
  }
  statements.set(sql, stmt);
  return stmt;
}
parentPort.postMessage({ id: 0 });
parentPort.on('message', (m) => {
  if (m.close) {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const stmt = prepare(m.sql);
    const params = m.params.map(toSqlite);
    if (stmt.reader) parentPort.postMessage({ id: m.id, rows: stmt.all(params) });
    else {
      const r = stmt.run(params);
      parentPort.postMessage({ id: m.id, changes: r.changes, lastInsertRowid: r.lastInsertRowid });
    }
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: { message: String((err && err.message) || err), code: err && err.code } });
  }
});
`;

interface Reply {
  id: number;
  rows?: Record<string, unknown>[];
  changes?: number;
  lastInsertRowid?: number | bigint;
  error?: { message: string; code?: string };
}

/** An error from the worker, with SQLite's code (isUniqueViolation and the like read it). */
function sqliteError(e: { message: string; code?: string }): Error {
  return Object.assign(new Error(e.message), e.code ? { code: e.code } : {});
}

/** Buffers come back from the worker as Uint8Arrays: made Buffers again, as better-sqlite3 gives them. */
function fromWorker(row: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(row)) if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return row;
}

class WorkerConnection implements DatabaseConnection {
  private worker: Worker | null = null;
  private starting: Promise<Worker> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(r: Reply): void; reject(e: Error): void }>();

  constructor(
    private readonly file: string,
    private readonly busyTimeoutMs: number,
  ) {}

  /** The worker, started (again, after a failure) when first needed. */
  private ready(): Promise<Worker> {
    if (this.worker) return Promise.resolve(this.worker);
    if (this.starting) return this.starting;
    const starting: Promise<Worker> = new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { file: this.file, driverPath, busyTimeoutMs: this.busyTimeoutMs, maxStatements: WORKER_STATEMENTS },
        stdout: true,
        stderr: true,
      });
      const fail = (err: Error) => {
        if (this.worker === worker) this.worker = null;
        if (this.starting === starting) this.starting = null;
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
        reject(err);
      };
      worker.on('message', (m: Reply) => {
        if (m.id === 0) {
          if (m.error) return fail(new Error(`could not open the SQLite file in the background connection: ${m.error.message}`));
          this.worker = worker;
          this.starting = null;
          // A connection that only waits must not keep the process alive (executeQuery refs it
          // while a statement is out).
          worker.unref();
          return resolve(worker);
        }
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        p.resolve(m);
      });
      worker.on('error', (err) => fail(new Error(`the background SQLite connection failed: ${err.message}`)));
      worker.on('exit', (code) => {
        // Not after close() or a timeout, which let go of it first.
        if (this.worker === worker || this.starting === starting) fail(new Error(`the background SQLite connection stopped (exit ${code})`));
      });
    });
    this.starting = starting;
    return starting;
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const worker = await this.ready();
    const id = this.nextId++;
    const reply = await new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`a statement on the background SQLite connection took longer than ${STATEMENT_TIMEOUT_MS} ms; the connection was restarted`));
        this.worker = null;
        void worker.terminate();
      }, STATEMENT_TIMEOUT_MS);
      this.pending.set(id, {
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      // Referenced while a statement is out, so a final flush at shutdown is waited for.
      worker.ref();
      worker.postMessage({ id, sql: compiled.sql, params: compiled.parameters });
    }).finally(() => {
      if (this.pending.size === 0) worker.unref();
    });
    if (reply.error) throw sqliteError(reply.error);
    if (reply.rows) return { rows: reply.rows.map(fromWorker) as R[] };
    return {
      rows: [],
      numAffectedRows: reply.changes !== undefined ? BigInt(reply.changes) : undefined,
      insertId: reply.lastInsertRowid !== undefined ? BigInt(reply.lastInsertRowid) : undefined,
    };
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the background SQLite connection does not stream');
  }

  /** Closes the worker's connection and waits for the worker to end (stopping it if it will not). */
  async close(): Promise<void> {
    const worker = this.worker ?? (this.starting ? await this.starting.catch(() => null) : null);
    this.worker = null;
    if (!worker) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => void worker.terminate(), 5_000);
      worker.once('exit', () => {
        clearTimeout(timer);
        for (const p of this.pending.values()) p.reject(new Error('the background SQLite connection was closed'));
        this.pending.clear();
        resolve();
      });
      worker.postMessage({ close: true });
    });
  }
}

const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');

/** Kysely's SQLite driver's shape over the worker's connection: one statement or transaction at a time. */
class WorkerDriver implements Driver {
  private readonly connection: WorkerConnection;
  private lock: Promise<void> = Promise.resolve();
  /** Lets the next acquireConnection() in: set by each acquire, called by its release. */
  private release: () => void = () => undefined;

  constructor(file: string, busyTimeoutMs: number) {
    this.connection = new WorkerConnection(file, busyTimeoutMs);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void;
    const previous = this.lock;
    this.lock = new Promise<void>((r) => (release = r));
    await previous;
    this.release = release;
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(): Promise<void> {
    this.release();
  }

  async destroy(): Promise<void> {
    await this.connection.close();
  }
}

/** A Kysely over a second connection to file, in a worker thread (see above). */
export function backgroundSqlite(file: string, busyTimeoutMs: number): Kysely<Database> {
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new WorkerDriver(file, busyTimeoutMs),
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
}
