import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openPostgres } from '../../src/db/postgres.js';
import { createLogger } from '../../src/logger.js';
import { migrations } from '../../migrations/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/server.js';
import { postgresAdminUrl, testStore } from '../helpers/store.js';

/** Several instances starting at once on one empty PostgreSQL database (postgres project only). */

const root = path.resolve(import.meta.dirname, '../..');
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const f of cleanups.splice(0)) await f();
});

async function freshDatabase() {
  const db = await createTestDatabase(postgresAdminUrl());
  cleanups.push(db.drop);
  return db.url;
}

async function appliedMigrations(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ name: string }>('select name from kysely_migration order by name')).rows.map((r) => r.name);
  } finally {
    await c.end();
  }
}

describe.skipIf(testStore !== 'postgres')('migrations on PostgreSQL', () => {
  it('applies every migration once when three stores migrate one empty database at the same moment', async () => {
    const url = await freshDatabase();
    const config = loadConfig({ TERRACE_DATA_DIR: tempDir(), TERRACE_DATABASE_URL: url });
    const stores = [0, 1, 2].map(() => openPostgres(config.database!, createLogger('silent')));
    try {
      const applied = await Promise.all(stores.map((s) => s.migrate()));
      // Exactly one store applied them; the others waited on the lock and found nothing to do.
      expect(applied.map((a) => a.length).sort()).toEqual([0, 0, Object.keys(migrations).length]);
      expect(await appliedMigrations(url)).toEqual(Object.keys(migrations).sort());
      // And the schema works: a write and a read through each store.
      await stores[0]!.db.insertInto('settings').values({ key: 'k', value: 'v' }).execute();
      for (const s of stores) expect(await s.db.selectFrom('settings').selectAll().execute()).toEqual([{ key: 'k', value: 'v' }]);
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it('starts three Terrace processes at once on one empty database; all serve it', async () => {
    const url = await freshDatabase();
    const procs = [0, 1, 2].map(() => {
      // node itself, not the tsx wrapper: killing a wrapper would leave its server running.
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          PORT: '0',
          TERRACE_LOG_LEVEL: 'info',
          TERRACE_DATA_DIR: tempDir(),
          TERRACE_DATABASE_URL: url,
          TERRACE_ADMIN_TOKEN: 'shared-admin-token-0123456789abcdef',
          TERRACE_SECRET_KEY: 'a-secret-key-shared-by-every-instance-0123',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      return { child, out: () => out };
    });
    const urls = await Promise.all(
      procs.map(async (p) => {
        for (let i = 0; i < 600; i++) {
          const m = p.out().match(/"url":"(http:\/\/[^"]+)"/);
          if (m) return m[1]!;
          if (p.child.exitCode !== null) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`an instance did not start:\n${p.out()}`);
      }),
    );
    expect(await appliedMigrations(url)).toEqual(Object.keys(migrations).sort());
    // One applied the migrations; no instance failed on another's.
    expect(procs.filter((p) => p.out().includes('applied migrations'))).toHaveLength(1);
    // An organization made through one instance is there through the others.
    const headers = { Authorization: 'Bearer shared-admin-token-0123456789abcdef', 'Content-Type': 'application/vnd.api+json' };
    const created = await fetch(`${urls[0]}/api/v2/organizations`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ data: { type: 'organizations', attributes: { name: 'shared', email: 'ops@example.com' } } }),
    });
    expect(created.status).toBe(201);
    for (const u of urls) {
      const r = await fetch(`${u}/api/v2/organizations/shared`, { headers });
      expect(r.status).toBe(200);
      expect(((await r.json()) as any).data.attributes.name).toBe('shared');
      expect((await fetch(`${u}/readyz`)).status).toBe(200);
    }
  }, 60_000);
});
