import fs from 'node:fs';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { migrate, type Db, type Store } from './index.js';
import type { Database } from './schema.js';

// Counts and sums come back as int8 and numeric, which pg returns as strings (they may exceed
// 2^53). Terrace's counts never do, and the SQLite store returns numbers: so do the same here.
const INT8 = 20;
const NUMERIC = 1700;
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return (value: string) => (value === null ? null : Number(value));
    return pg.types.getTypeParser(oid, format);
  },
};

function poolConfig(config: DatabaseConfig, opts: { max: number; statementTimeoutMs: number }): pg.PoolConfig {
  const ssl =
    config.tls === 'disable'
      ? false
      : config.tls === 'require'
        ? { rejectUnauthorized: false }
        : { rejectUnauthorized: true, ...(config.caFile ? { ca: fs.readFileSync(config.caFile, 'utf8') } : {}) };
  return {
    connectionString: config.url,
    ssl,
    max: opts.max,
    // 0 turns the server-side limit off (the migration connection); undefined leaves the server's.
    statement_timeout: opts.statementTimeoutMs,
    connectionTimeoutMillis: config.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: 'terrace',
    types,
  };
}

/**
 * Opens a connection pool to PostgreSQL. Nothing connects until the first query; migrate()
 * is that first query at start-up, so a bad URL or an unreachable server fails the start.
 */
export function openPostgres(config: DatabaseConfig, logger: Logger): Store {
  const pool = new pg.Pool(poolConfig(config, { max: config.poolSize, statementTimeoutMs: config.statementTimeoutMs }));
  // An idle client losing its server (a restart, a failover) must not crash the process: the
  // pool drops it, and the next query opens a fresh one.
  pool.on('error', (err) => logger.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'an idle PostgreSQL connection failed; the pool replaces it'));
  const db: Db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;
  return {
    db,
    // Nothing on PostgreSQL holds up the event loop while it waits for the server.
    background: db,
    dialect: 'postgres',
    async migrate() {
      // Migrations may run longer than any request's statement timeout (an index on a big
      // table), and wait on other instances' migration lock: they get a connection without one.
      const migrationPool = new pg.Pool(poolConfig(config, { max: 1, statementTimeoutMs: 0 }));
      migrationPool.on('error', (err) => logger.warn({ err: { message: err.message } }, 'the PostgreSQL migration connection failed'));
      const migrationDb = new Kysely<Database>({ dialect: new PostgresDialect({ pool: migrationPool }) });
      try {
        return await migrate(migrationDb);
      } finally {
        await migrationDb.destroy();
      }
    },
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}
