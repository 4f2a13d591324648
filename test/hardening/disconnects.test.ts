import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturingLogger, LEVEL, type LogLine } from '../helpers/logs.js';
import { createOrg } from '../helpers/organizations.js';
import { createModule, createVersion, moduleTarball, upload } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, md5, stateFixture, stateSnapshot } from '../helpers/state.js';

let t: TestServer;
let lines: LogLine[];

beforeAll(async () => {
  const cap = capturingLogger('debug');
  lines = cap.lines;
  t = await startTestServer({ TERRACE_JOBS: 'false' }, { logger: cap.logger });
  await createOrg(t, 'acme');
});

afterAll(async () => {
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends the head and part of a body, waits until the server has begun on it, then disconnects. */
async function abandon(head: string, partial: Buffer | string, seen: () => boolean): Promise<void> {
  const port = Number(new URL(t.url).port);
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  socket.write(head);
  socket.write(partial);
  while (!seen()) await sleep(10);
  socket.destroy();
}

/** Waits for the log line that closes the story of a request (its access line). */
async function settled(count: number): Promise<void> {
  while (lines.filter((l) => l.msg === 'request').length < count) await sleep(10);
}

const accessLines = () => lines.filter((l) => l.msg === 'request').length;

describe('a client that disconnects mid-request', () => {
  it('is logged as a client abort at info, without a stack, never as an unhandled error or a 500', async () => {
    const before = accessLines();
    const mark = lines.length;
    const body = JSON.stringify({ data: { type: 'organizations', attributes: { name: 'half', email: 'h@example.com' } } });
    await abandon(
      `POST /api/v2/organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/vnd.api+json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body.slice(0, 20),
      // Give the server a moment to begin reading the body (if it has not, the test still holds).
      (() => {
        const at = Date.now();
        return () => Date.now() - at > 150;
      })(),
    );
    await settled(before + 1);
    const mine = lines.slice(mark);
    expect(mine.filter((l) => l.level >= LEVEL.warn)).toEqual([]);
    const abort = mine.find((l) => l.msg === 'client closed the connection before the request completed');
    expect(abort).toMatchObject({ level: LEVEL.info, method: 'POST', path: '/api/v2/organizations' });
    expect(abort).not.toHaveProperty('err');
    expect(mine.find((l) => l.msg === 'request')).toMatchObject({ status: 499 });
    expect((await t.api('GET', '/api/v2/organizations/half')).status).toBe(404);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).not.toMatch(/status="500"/);
  });

  it('mid module upload: the half-written archive is removed and the URL still takes the upload', async () => {
    await createModule(t, 'acme', 'cut', 'aws');
    const v = await createVersion(t, 'acme', 'cut', 'aws', '1.0.0');
    const tarball = await moduleTarball({ 'main.tf': `variable "x" {}\n# ${'q'.repeat(200_000)}\n` });
    const mark = lines.length;
    const before = accessLines();
    let blobSeen = false;
    await abandon(
      `PUT ${new URL(v.links.upload).pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${tarball.length}\r\n\r\n`,
      tarball.subarray(0, Math.floor(tarball.length / 2)),
      () => {
        // The version is claimed (uploading) once the server is streaming the body.
        void t.running.deps.db
          .selectFrom('registry_module_versions')
          .select('status')
          .where('id', '=', v.id)
          .executeTakeFirst()
          .then((r) => (blobSeen = r?.status === 'uploading'));
        return blobSeen;
      },
    );
    await settled(before + 1);
    const mine = lines.slice(mark);
    expect(mine.filter((l) => l.level >= LEVEL.warn)).toEqual([]);
    expect(mine.find((l) => l.msg === 'client closed the connection before the request completed')).toMatchObject({ level: LEVEL.info, path: '/uploads/modules/[redacted]' });
    const row = await t.running.deps.db.selectFrom('registry_module_versions').selectAll().where('id', '=', v.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'pending', blob_key: null });
    const blobs: string[] = [];
    for await (const b of t.running.deps.blobs.list('modules/')) blobs.push(b.key);
    expect(blobs).toEqual([]);
    const retry = await upload(v.links.upload, tarball);
    expect(retry.status).toBe(200);
    expect(retry.json.data.attributes.status).toBe('ok');
  });

  it('mid state upload: nothing is stored and the URL still takes the state', async () => {
    const S1 = stateFixture('outputs-serial1.json');
    const ws = await createWorkspace(t, 'acme', 'cut');
    await lock(t, ws.id);
    const s = JSON.parse(S1.toString('utf8'));
    const created = await t.api('POST', `/api/v2/workspaces/${ws.id}/state-versions`, {
      body: { data: { type: 'state-versions', attributes: { serial: s.serial, md5: md5(S1), lineage: s.lineage } } },
    });
    const url: string = created.json.data.attributes['hosted-state-upload-url'];
    const before = await stateSnapshot(t);
    const mark = lines.length;
    const n = accessLines();
    let claimed = false;
    await abandon(`PUT ${new URL(url).pathname} HTTP/1.1\r\nHost: x\r\nContent-Length: ${S1.length}\r\n\r\n`, S1.subarray(0, 100), () => {
      void t.running.deps.db
        .selectFrom('state_versions')
        .select('upload_token_hash')
        .where('id', '=', created.json.data.id)
        .executeTakeFirst()
        .then((r) => (claimed = r?.upload_token_hash?.startsWith('claimed:') === true));
      return claimed;
    });
    await settled(n + 1);
    expect(lines.slice(mark).filter((l) => l.level >= LEVEL.warn)).toEqual([]);
    expect(await stateSnapshot(t)).toEqual(before);
    expect((await upload(url, S1)).status).toBe(200);
  });
});
