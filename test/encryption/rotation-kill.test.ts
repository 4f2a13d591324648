import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestServer, tempDir } from '../helpers/server.js';
import { spawnServer, type ServerProcess } from '../helpers/instances.js';
import { download, orgNamed, pushSecretState } from './helpers.js';

const NEW_KEY = `k2:${Buffer.alloc(32, 7).toString('base64')}`;
const dataDir = tempDir('terrace-enc-kill-');
const children: ServerProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A real server process on the data dir, rotating slowly (one data key per batch) so it can be cut short. */
async function child(): Promise<ServerProcess> {
  const c = await spawnServer(dataDir, {
    TERRACE_ENCRYPTION_KEYS: NEW_KEY,
    TERRACE_ENCRYPTION_BATCH_SIZE: '1',
    TERRACE_ENCRYPTION_BATCH_PAUSE_MS: '25',
    TERRACE_JOB_LEASE_SECONDS: '3',
  });
  children.push(c);
  return c;
}

async function status(url: string) {
  const r = await fetch(`${url}/api/v2/admin/encryption`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  return ((await r.json()) as any).data.attributes;
}

/** Polls (bounded) until cond holds for the status. */
async function until(url: string, cond: (s: any) => boolean): Promise<any> {
  for (let i = 0; i < 1200; i++) {
    const s = await status(url);
    if (cond(s)) return s;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the condition never held');
}

describe('a key rotation cut short by SIGKILL', () => {
  it('finishes after a restart, with every blob still readable', async () => {
    const seed = await startTestServer({}, { dataDir });
    await orgNamed(seed, 'acme');
    const pushed = [];
    for (let i = 0; i < 12; i++) pushed.push(await pushSecretState(seed, 'acme', `ws-${i}`, `k${i}`));
    await seed.running.jobs.runDue();
    await seed.close();

    const first = await child();
    const mid = await until(first.url, (s) => (s.job.progress?.rewrapped ?? 0) > 0);
    expect(mid.complete).toBe(false);
    first.proc.kill('SIGKILL');
    await new Promise((r) => first.proc.once('exit', r));

    const second = await child();
    const done = await until(second.url, (s) => s.complete === true && s.job.state === 'idle');
    expect(Object.keys(done['blobs-by-key-id'])).toEqual(['k2']);
    expect(done['blobs-by-key-id'].k2).toBe(36);
    expect(Object.keys(done['secrets-by-key-id'])).toEqual(['k2']);
    for (const p of pushed) {
      const sv = await fetch(`${second.url}/api/v2/state-versions/${p.svId}`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
      const d = await download(((await sv.json()) as any).data.attributes['hosted-state-download-url']);
      expect(d.status).toBe(200);
      expect(d.body.equals(p.state)).toBe(true);
    }
    await second.stop();
  }, 120_000);
});
