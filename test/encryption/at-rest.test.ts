import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, md5, pushState } from '../helpers/state.js';
import { blobFiles, download, filesContaining, orgNamed, pushSecretState } from './helpers.js';

const KEY_A = `a:${Buffer.alloc(32, 1).toString('base64')}`;
const KEY_B = `b:${Buffer.alloc(32, 2).toString('base64')}`;

let t: TestServer;
const dataDir = tempDir('terrace-enc-');
const clock = new ManualClock(new Date('2026-11-23T12:00:00Z'));

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' }, { dataDir, clock });
  await orgNamed(t, 'acme');
});

afterAll(async () => {
  await t?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A URL the previous server signed, pointed at the current one (each start takes a new port). */
const onServer = (url: string) => t.url + new URL(url).pathname;

const status = async (s: TestServer) => {
  const r = await s.api('GET', '/api/v2/admin/encryption');
  expect(r.status).toBe(200);
  return r.json.data.attributes;
};

describe('state at rest', () => {
  let pushed: Awaited<ReturnType<typeof pushSecretState>>;

  it('leaves no secret of an uploaded state in any file of the data directory', async () => {
    pushed = await pushSecretState(t, 'acme', 'secret-ws', 'one');
    expect(await t.running.jobs.runDue()).toBe(1); // the state's processing: outputs extracted
    // The SQLite file (and its WAL) and every blob: state, JSON state, JSON outputs.
    expect(filesContaining(dataDir, pushed.secrets)).toEqual([]);
    const sealed = blobFiles(dataDir, '.json');
    expect(sealed.length).toBe(3);
    for (const f of sealed) expect(fs.readFileSync(f).subarray(0, 8).toString('latin1')).toBe('TRSEALD\x01');
    const keys = await t.running.deps.db.selectFrom('blob_data_keys').selectAll().execute();
    expect(keys.length).toBe(3);
    for (const k of keys) {
      expect(k.key_id).toBe('default');
      expect(typeof k.wrapped).toBe('string');
    }
  });

  it('gives back exactly the uploaded bytes, with md5 and size of the plaintext', async () => {
    const sv = await t.api('GET', `/api/v2/state-versions/${pushed.svId}`);
    expect(sv.json.data.attributes.size).toBe(pushed.state.length);
    expect(sv.json.data.attributes.md5).toBe(md5(pushed.state));
    const d = await download(sv.json.data.attributes['hosted-state-download-url']);
    expect(d.status).toBe(200);
    expect(d.body.equals(pushed.state)).toBe(true);
    const outs = await t.api('GET', `/api/v2/state-versions/${pushed.svId}/outputs`);
    const secret = outs.json.data.find((o: any) => o.attributes.name === 'db_password');
    const one = await t.api('GET', `/api/v2/state-version-outputs/${secret.id}`);
    expect(one.json.data.attributes.value).toBe(pushed.secrets[2]);
  });

  it('refuses a flipped byte with a clear 500 and serves none of it', async () => {
    const p = await pushSecretState(t, 'acme', 'flipped', 'two');
    const sv = await t.api('GET', `/api/v2/state-versions/${p.svId}`);
    const file = blobFiles(dataDir, `${p.svId}.json`)[0]!;
    const bytes = fs.readFileSync(file);
    bytes[60] = bytes[60]! ^ 0x01;
    fs.writeFileSync(file, bytes);
    const d = await download(sv.json.data.attributes['hosted-state-download-url']);
    expect(d.status).toBe(500);
    const body = JSON.parse(d.body.toString('utf8'));
    expect(body.errors[0].title).toBe('stored data unreadable');
    expect(body.errors[0].detail).toMatch(/failed its integrity check/);
    for (const s of p.secrets) expect(d.body.includes(s)).toBe(false);
  });

  it('refuses a truncated blob the same way', async () => {
    const p = await pushSecretState(t, 'acme', 'truncated', 'three');
    const sv = await t.api('GET', `/api/v2/state-versions/${p.svId}`);
    const file = blobFiles(dataDir, `${p.svId}.json`)[0]!;
    fs.truncateSync(file, fs.statSync(file).size - 1);
    const d = await download(sv.json.data.attributes['hosted-state-download-url']);
    expect(d.status).toBe(500);
    expect(JSON.parse(d.body.toString('utf8')).errors[0].title).toBe('stored data unreadable');
  });

  it('aborts a download whose later chunk is altered, before any of that chunk is sent', async () => {
    const ws = await createWorkspace(t, 'acme', 'big');
    await lock(t, ws.id);
    const secretTail = 'TAIL-SECRET-Kd83hQ';
    const state = Buffer.from(
      JSON.stringify({ version: 4, terraform_version: '1.9.8', serial: 1, lineage: 'big', outputs: { pad: { value: 'x'.repeat(200_000), type: 'string' }, tail: { value: secretTail, type: 'string' } }, resources: [] }),
    );
    const r = await pushState(t, ws.id, state);
    expect(r.status).toBe(201);
    const file = blobFiles(dataDir, `${r.json.data.id}.json`)[0]!;
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 20] = bytes[bytes.length - 20]! ^ 0x01; // inside the last chunk, which holds the tail
    fs.writeFileSync(file, bytes);
    const res = await fetch(r.json.data.attributes['hosted-state-download-url']);
    expect(res.status).toBe(200); // the first chunk was sound, so headers went out…
    const received: Buffer[] = [];
    let failed = false;
    try {
      for await (const c of Readable.fromWeb(res.body as any)) received.push(c as Buffer);
    } catch {
      failed = true;
    }
    expect(failed).toBe(true); // …and the response was aborted, not ended as if complete
    const got = Buffer.concat(received);
    expect(got.length).toBeLessThan(state.length);
    expect(got.includes(secretTail)).toBe(false);
    expect(state.subarray(0, got.length).equals(got)).toBe(true);
  });
});

describe('blobs stored before encryption and key rotation', () => {
  it('serves a plaintext blob from before encryption, then seals it to a new key and deletes the old', async () => {
    const p = await pushSecretState(t, 'acme', 'legacy', 'four');
    // Make it what an older Terrace left: the plaintext under the same key, no data key on record.
    const row = await t.running.deps.db.selectFrom('state_versions').selectAll().where('id', '=', p.svId).executeTakeFirstOrThrow();
    const inner = (t.running.deps.blobs as any).inner;
    await inner.put(row.blob_key!, Readable.from([p.state]));
    await t.running.deps.db.deleteFrom('blob_data_keys').where('blob_key', '=', row.blob_key!).execute();
    expect(filesContaining(path.join(dataDir, 'blobs'), p.secrets).length).toBeGreaterThan(0);
    const sv = await t.api('GET', `/api/v2/state-versions/${p.svId}`);
    const before = await download(sv.json.data.attributes['hosted-state-download-url']);
    expect(before.body.equals(p.state)).toBe(true);
    expect((await status(t))['plaintext-blobs']).toBe(1);
    await t.running.jobs.runDue(); // earlier tests' processing; no upkeep is queued without a restart
    expect((await status(t))['plaintext-blobs']).toBe(1);

    await t.close({ keepData: true });
    t = await startTestServer({ TERRACE_JOBS: 'false' }, { dataDir, clock });
    expect((await status(t)).job.state).toBe('scheduled');
    expect(await t.running.jobs.runDue()).toBe(1);
    const after = await t.running.deps.db.selectFrom('state_versions').select('blob_key').where('id', '=', p.svId).executeTakeFirstOrThrow();
    expect(after.blob_key).toBe(`${row.blob_key}.sealed`);
    expect(fs.existsSync(path.join(dataDir, 'blobs', row.blob_key!))).toBe(false);
    expect(filesContaining(path.join(dataDir, 'blobs'), p.secrets)).toEqual([]);
    const d = await download((await t.api('GET', `/api/v2/state-versions/${p.svId}`)).json.data.attributes['hosted-state-download-url']);
    expect(d.body.equals(p.state)).toBe(true);
    const s = await status(t);
    expect(s['plaintext-blobs']).toBe(0);
    expect(s.complete).toBe(true);
  });

  it('rotates: a new current key, every data key and sealed secret re-wrapped, old signed URLs still good', async () => {
    const p = await pushSecretState(t, 'acme', 'rotate', 'five');
    await t.running.jobs.runDue();
    const oldUrl = (await t.api('GET', `/api/v2/state-versions/${p.svId}`)).json.data.attributes['hosted-state-download-url'];
    await t.close({ keepData: true });

    t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_ENCRYPTION_KEYS: `${KEY_A},${KEY_B}` }, { dataDir, clock });
    const mid = await status(t);
    expect(mid['current-key-id']).toBe('a');
    expect(mid['configured-key-ids']).toEqual(['a', 'b', 'default']);
    expect(mid.complete).toBe(false);
    expect(mid['blobs-by-key-id'].default).toBeGreaterThan(0);
    expect(mid.job.state).toBe('scheduled');
    expect(await t.running.jobs.runDue()).toBe(1);
    const done = await status(t);
    expect(Object.keys(done['blobs-by-key-id'])).toEqual(['a']);
    expect(Object.keys(done['secrets-by-key-id'])).toEqual(['a']);
    expect(done.complete).toBe(true);
    expect(done.job.state).toBe('idle');

    // The old key goes: the secret.key file was "default". Everything still reads.
    fs.rmSync(path.join(dataDir, 'secret.key'));
    await t.close({ keepData: true });
    t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_ENCRYPTION_KEYS: KEY_A }, { dataDir, clock });
    expect((await status(t))['configured-key-ids']).toEqual(['a']);
    const d = await download((await t.api('GET', `/api/v2/state-versions/${p.svId}`)).json.data.attributes['hosted-state-download-url']);
    expect(d.body.equals(p.state)).toBe(true);
    const outs = await t.api('GET', `/api/v2/state-versions/${p.svId}/outputs`);
    const secret = outs.json.data.find((o: any) => o.attributes.name === 'db_password');
    expect((await t.api('GET', `/api/v2/state-version-outputs/${secret.id}`)).json.data.attributes.value).toBe(p.secrets[2]);
    // A URL signed under "default" no longer verifies once "default" is gone…
    expect((await download(onServer(oldUrl))).status).toBe(404);
  });

  it('keeps URLs signed under an older key valid while that key is listed', async () => {
    const p = await pushSecretState(t, 'acme', 'signed', 'six');
    const url = (await t.api('GET', `/api/v2/state-versions/${p.svId}`)).json.data.attributes['hosted-state-download-url'];
    await t.close({ keepData: true });
    t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_ENCRYPTION_KEYS: `${KEY_B},${KEY_A}` }, { dataDir, clock });
    const d = await download(onServer(url));
    expect(d.status).toBe(200);
    expect(d.body.equals(p.state)).toBe(true);
  });

  it('shows the status to site admins only', async () => {
    const r = await t.api('GET', '/api/v2/admin/encryption', { token: null });
    expect(r.status).toBe(401);
    const { createUserWithToken } = await import('../helpers/server.js');
    const u = await createUserWithToken(t, 'plain-user');
    const n = await t.api('GET', '/api/v2/admin/encryption', { token: u.token });
    expect(n.status).toBe(404);
    expect(n.json.errors[0].status).toBe('404');
  });
});
