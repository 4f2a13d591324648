import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openSqlite, type Store } from '../../src/db/index.js';
import { openPostgres } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, dropTestDatabase } from './postgres.js';

/**
 * Which store the tests run on: the vitest project "postgres" sets TERRACE_TEST_STORE=postgres
 * (see vitest.config.ts); anything else is the embedded SQLite file.
 */
export const testStore: 'sqlite' | 'postgres' = process.env.TERRACE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** The admin URL of the run's PostgreSQL server (postgres project only). */
export function postgresAdminUrl(): string {
  const url = inject('postgresUrl');
  if (!url) throw new Error('no PostgreSQL server for this run: the postgres project starts one in its globalSetup');
  return url;
}

const URL_FILE = 'test-postgres-url';

/**
 * On PostgreSQL, the database belonging to a test data dir: created on first use and remembered
 * in the dir, so a server restarted on the same dir finds its data. undefined on SQLite.
 */
export async function testDatabaseFor(dataDir: string): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  if (testStore !== 'postgres') return undefined;
  const file = path.join(dataDir, URL_FILE);
  if (fs.existsSync(file)) {
    const url = fs.readFileSync(file, 'utf8');
    return { url, drop: () => dropTestDatabase(postgresAdminUrl(), new URL(url).pathname.slice(1)) };
  }
  const db = await createTestDatabase(postgresAdminUrl());
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, db.url);
  // Terrace on PostgreSQL never generates a server key (instances must share one); a test server
  // gets what a SQLite start would have generated, a random key in its data dir.
  const keyFile = path.join(dataDir, 'secret.key');
  if (!fs.existsSync(keyFile)) fs.writeFileSync(keyFile, crypto.randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  return db;
}

/**
 * The settings that point a server started by hand (startServer(loadConfig(…))) at the same store
 * as the test server that used dataDir before it: {} on SQLite (the file is in the dir).
 */
export function storeEnv(dataDir: string): Record<string, string> {
  const file = path.join(dataDir, URL_FILE);
  return testStore === 'postgres' && fs.existsSync(file) ? { TERRACE_DATABASE_URL: fs.readFileSync(file, 'utf8') } : {};
}

/** Opens the store a test server on dataDir used (read it while no server runs, or alongside one). */
export function openTestStore(dataDir: string): Store {
  const env = storeEnv(dataDir);
  if (!env.TERRACE_DATABASE_URL) return openSqlite(path.join(dataDir, 'terrace.db'));
  const config = loadConfig({ TERRACE_DATA_DIR: dataDir, TERRACE_SECRET_KEY: 'unused-for-reading-rows-0123456789', ...env });
  return openPostgres(config.database!, createLogger('silent'));
}
