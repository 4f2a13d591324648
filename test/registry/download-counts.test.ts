import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DownloadCounter } from '../../src/registry/downloads.js';
import { spawnServer } from '../helpers/instances.js';
import { capturingLogger, LEVEL, type LogLine } from '../helpers/logs.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { ADMIN_TOKEN, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { openTestStore, testDatabaseFor } from '../helpers/store.js';
import { eventually } from '../helpers/vcs-modules.js';

/**
 * Download counts batched in memory (issue 14): a download increments a per-process map, a
 * flusher writes it every TERRACE_DOWNLOAD_FLUSH_MS and at shutdown, and readers add what this
 * process has not written yet. Each test reads the downloads table itself to tell what is
 * written from what is only pending.
 */

/** The downloads table as written: total count per module id. */
async function written(dataDir: string): Promise<Map<string, number>> {
  const store = openTestStore(dataDir);
  try {
    const rows = await store.db.selectFrom('registry_module_downloads').select(['module_id', 'count']).execute();
    const totals = new Map<string, number>();
    for (const r of rows) totals.set(r.module_id, (totals.get(r.module_id) ?? 0) + Number(r.count));
    return totals;
  } finally {
    await store.close();
  }
}

/** Polls read until ok (a bounded wait); returns the value that was ok. */
const until = <T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> =>
  eventually(async () => {
    const v = await read();
    return ok(v) ? v : undefined;
  }, what, 20_000);

const summaryOf = async (t: TestServer, name: string) => {
  const r = await t.api('GET', `/v2/modules/acme/${name}/aws/downloads/summary`);
  expect(r.status).toBe(200);
  return r.json.data as { id: string; attributes: { week: number; month: number; year: number; total: number } };
};
const download = (t: TestServer, name: string, method = 'GET') => t.api(method, `/v1/modules/acme/${name}/aws/1.0.0/download`);

/** Makes every flush of t fail as an unreachable store would, until restore(). */
function failWrites(t: TestServer) {
  const counter = t.running.deps.downloads;
  const original = counter.writer;
  const state = { attempts: 0 };
  counter.writer = async () => {
    state.attempts++;
    throw new Error('store unreachable (test)');
  };
  return { state, restore: () => (counter.writer = original) };
}

describe('in one process', () => {
  let t: TestServer;
  let logs: LogLine[];

  beforeAll(async () => {
    const captured = capturingLogger('info');
    logs = captured.lines;
    t = await startTestServer({}, { logger: captured.logger });
    await createOrganization(t, 'acme');
    for (const name of ['counted', 'failing', 'gone', 'kept']) await publish(t, 'acme', name, 'aws', '1.0.0');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts N concurrent downloads exactly, HEAD not at all, everywhere counts are read, before and after the flush', async () => {
    const n = 60;
    const answers = await Promise.all([
      ...Array.from({ length: n }, () => download(t, 'counted')),
      ...Array.from({ length: 10 }, () => download(t, 'counted', 'HEAD')),
    ]);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 204));

    const readAll = async () => {
      const list = await t.api('GET', '/v1/modules/acme');
      const detail = await t.api('GET', '/v1/modules/acme/counted/aws/1.0.0');
      const metrics = await t.api('GET', '/metrics', { token: null });
      const line = metrics.text.split('\n').find((l) => l.startsWith('terrace_registry_downloads{'))!;
      return {
        summary: (await summaryOf(t, 'counted')).attributes,
        listed: list.json.modules.find((m: { name: string }) => m.name === 'counted').downloads,
        detail: detail.json.downloads,
        metric: Number(line.split(' ').pop()),
      };
    };
    // At once, from this instance, whether or not a flush has happened yet.
    expect(await readAll()).toEqual({ summary: { week: n, month: n, year: n, total: n }, listed: n, detail: n, metric: n });

    const id = (await summaryOf(t, 'counted')).id;
    const stored = await until(() => written(t.dataDir), (w) => (w.get(id) ?? 0) >= n, 'the flush');
    expect(stored.get(id)).toBe(n);
    // Written once and no longer pending: nothing doubled.
    expect(await readAll()).toEqual({ summary: { week: n, month: n, year: n, total: n }, listed: n, detail: n, metric: n });
  });

  it('keeps the counts of a failed flush in memory, shows them, and writes them once the store is back', async () => {
    const id = (await summaryOf(t, 'failing')).id;
    const failing = failWrites(t);
    try {
      for (let i = 0; i < 7; i++) expect((await download(t, 'failing')).status).toBe(204);
      await until(async () => failing.state.attempts, (a) => a >= 2, 'two failed flushes');
      // Pending counts are shown at once, though none is written.
      expect((await summaryOf(t, 'failing')).attributes).toEqual({ week: 7, month: 7, year: 7, total: 7 });
      expect((await written(t.dataDir)).get(id)).toBeUndefined();
      expect(logs.some((l) => l.level === LEVEL.warn && /could not write download counts/.test(l.msg))).toBe(true);
      expect((await download(t, 'failing')).status).toBe(204);
    } finally {
      failing.restore();
    }
    const stored = await until(() => written(t.dataDir), (w) => (w.get(id) ?? 0) >= 8, 'the flush after recovery');
    expect(stored.get(id)).toBe(8);
    expect((await summaryOf(t, 'failing')).attributes.total).toBe(8);
  });

  it('drops the pending counts of a deleted module without breaking the flush of the others', async () => {
    const goneId = (await summaryOf(t, 'gone')).id;
    const keptId = (await summaryOf(t, 'kept')).id;
    const failing = failWrites(t);
    try {
      for (let i = 0; i < 3; i++) expect((await download(t, 'gone')).status).toBe(204);
      for (let i = 0; i < 4; i++) expect((await download(t, 'kept')).status).toBe(204);
      // The counts of both are pending (a flush failed with them) when the module goes.
      await until(async () => failing.state.attempts, (a) => a >= 1, 'a failed flush');
      expect((await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/gone/aws')).status).toBe(204);
    } finally {
      failing.restore();
    }
    const stored = await until(() => written(t.dataDir), (w) => (w.get(keptId) ?? 0) >= 4, 'the flush of the kept module');
    expect(stored.get(keptId)).toBe(4);
    expect(stored.has(goneId)).toBe(false);
    // And the flusher goes on.
    expect((await download(t, 'kept')).status).toBe(204);
    const later = await until(() => written(t.dataDir), (w) => (w.get(keptId) ?? 0) >= 5, 'the next flush');
    expect(later.get(keptId)).toBe(5);
    expect((await t.api('GET', '/v2/modules/acme/gone/aws/downloads/summary')).status).toBe(404);
  });

  it('flushes at once, without waiting for the interval, when the pending keys reach the bound', async () => {
    const keptId = (await summaryOf(t, 'kept')).id;
    const before = (await written(t.dataDir)).get(keptId) ?? 0;
    // A counter of its own on the same store, never started: only the bound can make it write.
    const store = openTestStore(t.dataDir);
    try {
      const counter = new DownloadCounter(store.db, capturingLogger().logger, { flushMs: 3_600_000, maxKeys: 3 });
      counter.count(keptId, '2001-01-01');
      counter.count(keptId, '2001-01-02');
      counter.count(keptId, '2001-01-02');
      expect((await written(t.dataDir)).get(keptId) ?? 0).toBe(before);
      counter.count(keptId, '2001-01-03');
      const stored = await until(() => written(t.dataDir), (w) => (w.get(keptId) ?? 0) > before, 'the flush at the bound');
      expect(stored.get(keptId)).toBe(before + 4);
    } finally {
      await store.close();
    }
  });
});

describe('two instances flushing at once', () => {
  const dataDir = tempDir();
  const names = ['one', 'two', 'three', 'four', 'five', 'six'];
  let ids: string[];

  beforeAll(async () => {
    const t = await startTestServer({}, { dataDir });
    try {
      await createOrganization(t, 'acme');
      ids = [];
      for (const name of names) {
        await publish(t, 'acme', name, 'aws', '1.0.0');
        ids.push((await summaryOf(t, name)).id);
      }
    } finally {
      await t.close({ keepData: true });
    }
  });
  afterAll(async () => {
    await (await testDatabaseFor(dataDir))?.drop();
  });

  it('add up every count when their batches share rows: nothing lost, nothing doubled, nothing left pending', async () => {
    const before = await written(dataDir);
    // Two stores on one database, as two instances have: their flushes run concurrently.
    const stores = [openTestStore(dataDir), openTestStore(dataDir)];
    const { logger, lines } = capturingLogger('warn');
    const counters = stores.map((s) => new DownloadCounter(s.db, logger, { flushMs: 60_000 }));
    const rounds = 25;
    try {
      for (let round = 0; round < rounds; round++) {
        // Every module in both batches, a different number of times each round and instance.
        counters.forEach((c, k) => ids.forEach((id, i) => Array.from({ length: 1 + ((round + i + k) % 3) }, () => c.count(id, '2026-03-01'))));
        await Promise.all(counters.map((c) => c.flush()));
      }
    } finally {
      for (const s of stores) await s.close();
    }
    const after = await written(dataDir);
    ids.forEach((id, i) => {
      let expected = 0;
      for (let round = 0; round < rounds; round++) for (let k = 0; k < 2; k++) expected += 1 + ((round + i + k) % 3);
      expect(after.get(id), names[i]).toBe((before.get(id) ?? 0) + expected);
    });
    // No flush failed and was retried later: each wrote its whole batch the first time.
    expect(lines.filter((l) => l.level >= LEVEL.warn)).toEqual([]);
  });
});

describe('across processes', () => {
  const dataDir = tempDir();
  let moduleId: string;

  beforeAll(async () => {
    const t = await startTestServer({}, { dataDir });
    try {
      await createOrganization(t, 'acme');
      await publish(t, 'acme', 'proc', 'aws', '1.0.0');
      moduleId = (await summaryOf(t, 'proc')).id;
    } finally {
      await t.close({ keepData: true });
    }
  });
  afterAll(async () => {
    await (await testDatabaseFor(dataDir))?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const downloads = async (url: string, n: number) => {
    const answers = await Promise.all(
      Array.from({ length: n }, () => fetch(`${url}/v1/modules/acme/proc/aws/1.0.0/download`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } })),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 204));
  };

  it('writes the pending counts on a graceful shutdown (SIGTERM)', async () => {
    const before = (await written(dataDir)).get(moduleId) ?? 0;
    // A flush interval far beyond the test: only the shutdown writes.
    const server = await spawnServer(dataDir, { TERRACE_DOWNLOAD_FLUSH_MS: '60000' });
    try {
      await downloads(server.url, 25);
    } finally {
      await server.stop();
    }
    expect(server.proc.exitCode).toBe(0);
    expect((await written(dataDir)).get(moduleId)).toBe(before + 25);
  });

  it('loses at most the unflushed window on SIGKILL, never what was flushed', async () => {
    const before = (await written(dataDir)).get(moduleId) ?? 0;
    const server = await spawnServer(dataDir, { TERRACE_DOWNLOAD_FLUSH_MS: '250' });
    try {
      await downloads(server.url, 10);
      await until(() => written(dataDir), (w) => (w.get(moduleId) ?? 0) >= before + 10, 'the periodic flush');
      await downloads(server.url, 20);
      const exited = new Promise((r) => server.proc.once('exit', r));
      server.proc.kill('SIGKILL');
      await exited;
    } finally {
      await server.stop();
    }
    const after = (await written(dataDir)).get(moduleId) ?? 0;
    expect(after).toBeGreaterThanOrEqual(before + 10);
    expect(after).toBeLessThanOrEqual(before + 30);
  });
});
