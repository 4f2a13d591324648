import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, Kysely, Migrator, SqliteDialect, SqliteDriver, type Compilable, type DatabaseConnection, type SqliteDialectConfig, type Transaction } from 'kysely';
import { migrations } from '../../migrations/index.js';
import { backgroundSqlite } from './background.js';
import { isPostgres, type DialectName } from './dialect.js';
import { syncAfterCommit } from './generations.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Either the database or a transaction on it: store functions accept both. */
export type Queryable = Db | Tx;

export interface Store {
  db: Db;
  /**
   * For writes no request waits for (the download counts' flush): on SQLite a second connection in
   * a worker thread, so they do not hold up the requests on the main one (db/background.ts); on
   * PostgreSQL the same pool as db.
   */
  background: Db;
  dialect: DialectName;
  /** Applies every pending migration (on PostgreSQL under an advisory lock, so instances may start together). */
  migrate(): Promise<string[]>;
  /** Cheap liveness probe for /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SQLite driver prepares every statement anew, and compiling SQL costs more than running
 * most of Terrace's indexed queries. This keeps prepared statements by SQL text, least recently
 * used out first (bounded, since IN-lists make many distinct texts).
 */
function withStatementCache(sqlite: SQLite.Database) {
  const statements = new Map<string, SQLite.Statement>();
  return {
    prepare(source: string): SQLite.Statement {
      let stmt = statements.get(source);
      if (stmt) {
        statements.delete(source);
      } else {
        stmt = sqlite.prepare(source);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
      }
      statements.set(source, stmt);
      return stmt;
    },
    close(): void {
      statements.clear();
      sqlite.close();
    },
  };
}

/** How long a write on either SQLite connection waits for the other's to end. */
const SQLITE_BUSY_TIMEOUT_MS = 5000;

/**
 * Kysely's SQLite dialect, but a transaction takes the write lock when it begins (BEGIN
 * IMMEDIATE). With one connection that changes nothing; with the background connection beside it
 * (db/background.ts), a deferred transaction that read first could find, at its first write,
 * that the other connection had committed since: SQLite then refuses the write at once
 * (SQLITE_BUSY), where a transaction begun immediate waits for the lock before it reads anything.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): SqliteDriver {
    return new (class extends SqliteDriver {
      override async beginTransaction(connection: DatabaseConnection): Promise<void> {
        await connection.executeQuery(CompiledQuery.raw('begin immediate'));
      }
    })(this.settings);
  }
}

/** Opens (creating if needed) the SQLite file, sets WAL, foreign keys and a busy timeout. */
export function openSqlite(file: string): Store {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('cache_size = -65536');
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }) });
  // Its worker starts on first use: a process that never flushes download counts has none.
  const background = backgroundSqlite(file, SQLITE_BUSY_TIMEOUT_MS);
  let closed = false;
  return {
    db,
    background,
    dialect: 'sqlite',
    migrate: () => migrate(db),
    async ping() {
      sqlite.prepare('select 1').get();
    },
    async close() {
      if (closed) return;
      closed = true;
      await background.destroy();
      await db.destroy();
    },
  };
}

/**
 * Applies every pending forward-only migration; throws on the first failure. On PostgreSQL,
 * Kysely's migrator holds a session advisory lock and runs the pending migrations in one
 * transaction, so instances starting together apply each migration once and the others wait.
 */
export async function migrate(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

// PostgreSQL: serialization failures and deadlocks, where running the transaction again is the fix.
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_TRANSACTION_ATTEMPTS = 10;

/**
 * The one transaction helper. Everything inside commits together or not at all.
 *
 * SQLite runs one writer at a time, and code written against it may read, decide and write in
 * one transaction. On PostgreSQL the same code runs SERIALIZABLE, which gives exactly that
 * guarantee across instances: a transaction that would have seen another's concurrent write is
 * refused with a serialization failure and fn runs again from the start (so fn must only touch
 * the database; blobs go in place before, outbound calls after).
 */
export async function inTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const result = await runTransaction(db, fn);
  // What this instance caches reflects the commit before the caller goes on (db/generations.ts).
  await syncAfterCommit(db);
  return result;
}

const commitHooks = new WeakMap<object, (() => void)[]>();

/**
 * Runs fn once the transaction db belongs to has committed (at once outside one): for what must
 * happen once per change, such as a log line, when PostgreSQL may run the transaction again.
 */
export function afterCommit(db: Queryable, fn: () => void): void {
  const hooks = commitHooks.get(db);
  if (hooks) hooks.push(fn);
  else fn();
}

async function runTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  // Each attempt collects its own hooks; only the committed attempt's run.
  let hooks: (() => void)[] = [];
  const attempt = (tx: Tx) => {
    hooks = [];
    commitHooks.set(tx, hooks);
    return fn(tx);
  };
  const result = await attemptTransaction(db, attempt);
  for (const h of hooks) h();
  return result;
}

async function attemptTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (!isPostgres(db)) return db.transaction().execute(fn);
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().setIsolationLevel('serializable').execute(fn);
    } catch (err) {
      const code = (err as { code?: string } | null)?.code;
      if (!code || !RETRYABLE.has(code) || attempt >= MAX_TRANSACTION_ATTEMPTS) throw err;
      // Jittered, growing pause, so the transactions that collided do not collide again.
      await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
    }
  }
}

/** Unique-constraint failures (SQLite's codes, PostgreSQL's 23505), so services can turn them into 422s. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/**
 * A query whose SQL is built once and then only bound to new parameters, for hot paths where
 * Kysely's query building costs more than the indexed lookup itself. build() must add its
 * parameters in the order run() is given them.
 */
export function hotQuery<Row>(build: (db: Queryable) => Compilable<Row>): (db: Queryable, params: readonly unknown[]) => Promise<Row[]> {
  let text: string | undefined;
  return async (db, params) => {
    text ??= build(db).compile().sql;
    return (await db.executeQuery<Row>(CompiledQuery.raw(text, [...params]))).rows;
  };
}
