import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backgroundSqlite } from '../../src/db/background.js';
import { inTransaction } from '../../src/db/index.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { testStore } from '../helpers/store.js';

/**
 * SQLite's second connection (src/db/background.ts): the download counts' flush runs in a worker
 * thread, so requests go on while it writes or waits for the write lock; and transactions on the
 * main connection take that lock when they begin, so a commit on the other connection never
 * invalidates what they read. A third connection, opened here, stands for "someone else writes".
 */
describe.skipIf(testStore !== 'sqlite')('the background SQLite connection', () => {
  let t: TestServer;
  let file: string;

  beforeAll(async () => {
    t = await startTestServer();
    file = path.join(t.dataDir, 'terrace.db');
    await createOrganization(t, 'acme');
    await publish(t, 'acme', 'net', 'aws', '1.0.0');
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Holds SQLite's write lock from a third connection until release(). */
  function holdWriteLock() {
    const other = new SQLite(file, { timeout: 0 });
    other.exec('begin immediate');
    return {
      release() {
        other.exec('rollback');
        return other;
      },
    };
  }

  const totalOf = async () => {
    const r = await t.api('GET', '/v2/modules/acme/net/aws/downloads/summary');
    expect(r.status).toBe(200);
    return r.json.data.attributes.total as number;
  };

  it('writes the download counts beside the requests: while the flush waits for the lock, requests are answered', async () => {
    const counter = t.running.deps.downloads;
    await counter.flush();
    const before = new SQLite(file, { readonly: true });
    const writtenBefore = (before.prepare("select coalesce(sum(count), 0) n from registry_module_downloads").get() as { n: number }).n;
    before.close();

    const original = counter.writer;
    let started = 0;
    let settled = false;
    counter.writer = (rows) => {
      started++;
      return original(rows).finally(() => (settled = true));
    };
    const lock = holdWriteLock();
    let other: SQLite.Database | undefined;
    try {
      expect((await t.api('GET', '/v1/modules/acme/net/aws/1.0.0/download')).status).toBe(204);
      const flushing = counter.flush();
      for (let turns = 0; started === 0 && turns < 100; turns++) await new Promise((r) => setImmediate(r));
      // The flush has handed its batch over and waits for the lock held above. On the main
      // connection it would have waited inside that call, holding up the event loop until the
      // busy timeout, and failed.
      expect(started).toBe(1);
      const versions = await t.api('GET', '/v1/modules/acme/net/aws/versions');
      expect(versions.status).toBe(200);
      expect(settled).toBe(false);
      other = lock.release();
      await flushing;
      expect(settled).toBe(true);
      const n = (other.prepare("select coalesce(sum(count), 0) n from registry_module_downloads").get() as { n: number }).n;
      expect(n).toBe(writtenBefore + 1);
    } finally {
      counter.writer = original;
      other ??= lock.release();
      other.close();
    }
    expect(await totalOf()).toBe(writtenBefore + 1);
  });

  it('begins a transaction on the main connection with the write lock taken (BEGIN IMMEDIATE)', async () => {
    await inTransaction(t.running.deps.db, async () => {
      const other = new SQLite(file, { timeout: 0 });
      try {
        // Nothing has been read or written in the transaction yet: only an immediate begin holds the lock.
        expect(() => other.exec('begin immediate')).toThrow(/locked|busy/i);
      } finally {
        other.close();
      }
    });
    // Released at commit.
    const other = new SQLite(file, { timeout: 0 });
    other.exec('begin immediate');
    other.exec('rollback');
    other.close();
  });

  it('keeps SQLite error codes from the worker: a constraint failure there is one here', async () => {
    const bg = t.running.deps.store.background;
    const err = await bg
      .insertInto('registry_module_downloads')
      .values({ module_id: 'no-such-module', day: '2026-01-01', count: 1 })
      .execute()
      .catch((e: unknown) => e as { code?: string; message: string });
    expect(err).toMatchObject({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' });
  });
});

describe.skipIf(testStore !== 'sqlite')('the background SQLite connection, failing', () => {
  it('refuses statements with the reason when the file cannot be opened, and tries again on the next one', async () => {
    const bg = backgroundSqlite(path.join(tempDir(), 'missing', 'terrace.db'), 100);
    try {
      for (let i = 0; i < 2; i++) {
        await expect(bg.selectFrom('registry_modules').select('id').execute()).rejects.toThrow(/could not open the SQLite file in the background connection/);
      }
    } finally {
      await bg.destroy();
    }
  });
});
