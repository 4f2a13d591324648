import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { measureStateTransfer } from '../../bench/encrypted-state-memory.js';
import { ADMIN_TOKEN, tempDir } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/instances.js';

// The suite's proportional version of bench/encrypted-state-memory.ts (500 MiB, numbers in
// docs/performance.md): a 96 MiB state, generated streaming, through the upload URL and back
// from a real server process whose RSS is sampled. A server that buffered the state (or its
// sealed form) would grow by at least the state's size; streaming it grows by a few chunks.
// Linux only (/proc); nothing here is timed.
const MiB = 1024 * 1024;
const STATE = 96 * MiB;
const BOUND = 48 * MiB;

const dataDir = tempDir('terrace-enc-mem-');
let server: ServerProcess | undefined;

afterAll(async () => {
  await server?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe.skipIf(!fs.existsSync('/proc/self/status'))('memory with encryption on', () => {
  it('stays flat while a large state is uploaded through the upload URL and downloaded', async () => {
    server = await spawnServer(dataDir, { TERRACE_JOBS: 'false', TERRACE_MAX_STATE_BYTES: String(STATE + 16 * MiB) });
    const target = { url: server.url, pid: server.pid, token: ADMIN_TOKEN };
    // A small one first: the server's code paths and buffers are warm before the baseline.
    const warm = await measureStateTransfer(target, 4 * MiB, 'warm-up');
    expect(warm.md5Matches).toBe(true);
    const r = await measureStateTransfer(target, STATE, 'large');
    expect(r.md5Matches).toBe(true);
    expect(r.stateBytes).toBeGreaterThanOrEqual(STATE);
    // The stored blob is sealed, and so about the state's size: the transfer really went through the store.
    const stored = fs.readdirSync(path.join(dataDir, 'blobs'), { recursive: true, encoding: 'utf8' }).find((f) => f.endsWith(`${r.stateVersionId}.json`))!;
    const bytes = fs.statSync(path.join(dataDir, 'blobs', stored)).size;
    expect(bytes).toBeGreaterThan(r.stateBytes);
    const head = Buffer.alloc(8);
    const fd = fs.openSync(path.join(dataDir, 'blobs', stored), 'r');
    fs.readSync(fd, head, 0, 8, 0);
    fs.closeSync(fd);
    expect(head.toString('latin1')).toBe('TRSEALD\x01');
    // A server that buffers grows by the state's size on every transfer; garbage the collector has
    // not reached yet is a matter of timing (one CI run saw +64 MiB where +10 is usual). So a
    // transfer over the bound is measured once more, and the better of the two must be within it.
    const attempts = [r];
    const within = (a: typeof r) => a.uploadPeakRss - a.baselineRss < BOUND && a.downloadPeakRss - a.baselineRss < BOUND;
    if (!within(r)) {
      const again = await measureStateTransfer(target, STATE, 'large-again');
      expect(again.md5Matches).toBe(true);
      attempts.push(again);
    }
    const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;
    const seen = attempts.map((a) => `baseline ${mib(a.baselineRss)}, upload peak ${mib(a.uploadPeakRss)}, download peak ${mib(a.downloadPeakRss)}`).join('; then ');
    expect(attempts.some(within), seen).toBe(true);
  }, 300_000);
});
