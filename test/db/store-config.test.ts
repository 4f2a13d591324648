import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { postgresAdminUrl, testStore } from '../helpers/store.js';

const URL_ = 'postgres://terrace:s3cret-pass@db.internal:5432/terrace';

describe('the PostgreSQL settings', () => {
  it('selects PostgreSQL only when TERRACE_DATABASE_URL is set, with its defaults', () => {
    expect(loadConfig({}).database).toBeUndefined();
    expect(loadConfig({ TERRACE_DATABASE_URL: URL_ }).database).toEqual({
      url: URL_,
      poolSize: 10,
      tls: 'disable',
      caFile: undefined,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
    });
    const dir = tempDir();
    const ca = path.join(dir, 'ca.pem');
    fs.writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n');
    expect(
      loadConfig({
        TERRACE_DATABASE_URL: 'postgresql://u:p@10.0.0.5/registry',
        TERRACE_DATABASE_POOL_SIZE: '25',
        TERRACE_DATABASE_TLS: 'verify-full',
        TERRACE_DATABASE_CA_FILE: ca,
        TERRACE_DATABASE_STATEMENT_TIMEOUT_MS: '0',
        TERRACE_DATABASE_CONNECT_TIMEOUT_MS: '2500',
      }).database,
    ).toEqual({ url: 'postgresql://u:p@10.0.0.5/registry', poolSize: 25, tls: 'verify-full', caFile: ca, statementTimeoutMs: 0, connectTimeoutMs: 2500 });
  });

  it.each([
    [{ TERRACE_DATABASE_URL: 'not a url' }, 'TERRACE_DATABASE_URL: must be a URL like postgres://user:password@host:5432/database (percent-encode special characters in the password)'],
    [{ TERRACE_DATABASE_URL: 'mysql://u:p@h/db' }, 'TERRACE_DATABASE_URL: must start with postgres:// or postgresql://, got "mysql://"; leave it unset for the embedded SQLite store'],
    [{ TERRACE_DATABASE_URL: 'postgres://u:p@h:5432/' }, 'TERRACE_DATABASE_URL: must name a database, as in postgres://user:password@host:5432/database'],
    [{ TERRACE_DATABASE_URL: `${URL_}?sslmode=require` }, 'TERRACE_DATABASE_URL: must not carry "sslmode": set TERRACE_DATABASE_TLS (and TERRACE_DATABASE_CA_FILE) instead'],
    [{ TERRACE_DATABASE_URL: URL_, TERRACE_DATABASE_TLS: 'on' }, 'TERRACE_DATABASE_TLS: must be one of disable, require, verify-full, got "on"'],
    [{ TERRACE_DATABASE_URL: URL_, TERRACE_DATABASE_POOL_SIZE: '1' }, 'TERRACE_DATABASE_POOL_SIZE: must be between 2 and 1000, got 1'],
    [{ TERRACE_DATABASE_URL: URL_, TERRACE_DATABASE_STATEMENT_TIMEOUT_MS: '30s' }, 'TERRACE_DATABASE_STATEMENT_TIMEOUT_MS: must be a whole number, got "30s"'],
    [{ TERRACE_DATABASE_URL: URL_, TERRACE_DATABASE_CONNECT_TIMEOUT_MS: '5' }, 'TERRACE_DATABASE_CONNECT_TIMEOUT_MS: must be between 100 and 600000, got 5'],
    [{ TERRACE_DATABASE_URL: URL_, TERRACE_DATABASE_TLS: 'require', TERRACE_DATABASE_CA_FILE: '/etc/hosts' }, 'TERRACE_DATABASE_CA_FILE: is only used with TERRACE_DATABASE_TLS=verify-full'],
    [{ TERRACE_DATABASE_URL: URL_, TERRACE_DATABASE_TLS: 'verify-full', TERRACE_DATABASE_CA_FILE: '/nonexistent/ca.pem' }, 'TERRACE_DATABASE_CA_FILE: cannot read "/nonexistent/ca.pem": give the path of a PEM file with the CA certificates'],
  ])('refuses %j, naming the variable and never repeating the password', (env, message) => {
    let caught: unknown;
    try {
      loadConfig(env);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toBe(message);
    expect((caught as Error).message).not.toContain('s3cret-pass');
  });
});

const servers: TestServer[] = [];
afterEach(async () => {
  for (const t of servers.splice(0)) await t.close();
});

describe.skipIf(testStore !== 'postgres')('a PostgreSQL store at start and while serving', () => {
  it('refuses to start without a server key every instance shares, creating nothing', async () => {
    const db = await createTestDatabase(postgresAdminUrl());
    try {
      const dataDir = tempDir();
      const config = loadConfig({ PORT: '0', TERRACE_DATA_DIR: dataDir, TERRACE_DATABASE_URL: db.url, TERRACE_LOG_LEVEL: 'silent' });
      await expect(startServer(config)).rejects.toThrow(
        'TERRACE_SECRET_KEY: is required with TERRACE_DATABASE_URL (or TERRACE_ENCRYPTION_KEYS, or the same secret.key in every data dir): every instance sharing the database must use the same key',
      );
      expect(fs.readdirSync(dataDir)).toEqual([]);
    } finally {
      await db.drop();
    }
  });

  it('answers /readyz 503 while the database is unreachable', async () => {
    const t = await startTestServer();
    servers.push(t);
    const ready = await t.api('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json).toEqual({ status: 'ready', checks: { store: 'ok', blobs: 'ok' } });
    // The database goes away under the running server (its connections are closed by force).
    const url = fs.readFileSync(path.join(t.dataDir, 'test-postgres-url'), 'utf8');
    const { dropTestDatabase } = await import('../helpers/postgres.js');
    await dropTestDatabase(postgresAdminUrl(), new URL(url).pathname.slice(1));
    const down = await t.api('GET', '/readyz');
    expect(down.status).toBe(503);
    expect(down.json).toEqual({ status: 'not ready', checks: { store: 'failing', blobs: 'ok' } });
  });
});
