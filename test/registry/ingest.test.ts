import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { claimUpload } from '../../src/db/upload-claims.js';
import { hashToken } from '../../src/identity/tokens.js';
import { ingestModuleVersion, submitArchive, waitForIngestion } from '../../src/registry/ingest.js';
import { ApiError } from '../../src/http/errors.js';
import { createOrganization, createModule, createVersion, moduleTarball, upload } from '../helpers/registry.js';
import { ADMIN_TOKEN, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MAX = 64 * 1024;

// ---- a raw tar writer, for entries node-tar would refuse to produce ----
function header(p: string, type: string, size: number, linkpath = ''): Buffer {
  const b = Buffer.alloc(512);
  b.write(p, 0, 100, 'utf8');
  b.write('0000644\0', 100);
  b.write('0000000\0', 108);
  b.write('0000000\0', 116);
  b.write(size.toString(8).padStart(11, '0') + '\0', 124);
  b.write('14000000000\0', 136);
  b.fill(' ', 148, 156);
  b.write(type, 156);
  b.write(linkpath, 157, 100, 'utf8');
  b.write('ustar\0' + '00', 257, 'binary');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return b;
}
function entry(p: string, body = '', type = '0', linkpath = ''): Buffer {
  const data = Buffer.from(body);
  return Buffer.concat([header(p, type, data.length, linkpath), data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}
const tgz = (...parts: Buffer[]) => gzipSync(Buffer.concat([...parts, Buffer.alloc(1024)]));

const HOSTILE: [string, Buffer][] = [
  ['path traversal', tgz(entry('main.tf', 'variable "x" {}\n'), entry('../evil.tf', 'x'))],
  ['symlink out of the archive', tgz(entry('main.tf', 'variable "x" {}\n'), entry('passwd', '', '2', '/etc/passwd'))],
  ['hard link out of the archive', tgz(entry('main.tf', 'variable "x" {}\n'), entry('h', '', '1', '../x'))],
  ['not gzip', Buffer.from('just text, not an archive')],
];

let t: TestServer;
let version = 0;
const nextVersion = () => `1.0.${version++}`;
const modPath = '/api/v2/organizations/acme/registry-modules/private/acme/net/aws';

function moduleBlobs(dataDir = t.dataDir): string[] {
  const root = path.join(dataDir, 'blobs', 'modules');
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.tar.gz')).map((f) => path.join(root, f));
}
const db = () => t.running.deps.db;
const versionRow = (id: string) => db().selectFrom('registry_module_versions').selectAll().where('id', '=', id).executeTakeFirst();
const ingestJobs = () => db().selectFrom('jobs').selectAll().where('kind', '=', 'registry.ingest').execute();
const tokenOf = (uploadUrl: string) => new URL(uploadUrl).pathname.split('/').pop()!;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_MAX_ARCHIVE_BYTES: String(MAX) });
  await createOrganization(t, 'acme');
  await createModule(t, 'acme', 'net', 'aws');
});

afterAll(async () => {
  await t?.close();
});

describe('the upload URL feeds the ingestion job', () => {
  it('publishes through the queued job and answers 200 as before, leaving no job behind', async () => {
    const v = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
    const tarball = await moduleTarball({ 'main.tf': 'variable "region" {\n  type = string\n}\n', 'README.md': '# Net\n\nA network.\n' });
    const up = await upload(v.links.upload, tarball);
    expect(up.status).toBe(200);
    expect(up.json.data).toEqual({
      id: v.id,
      type: 'registry-module-versions',
      attributes: { status: 'ok', version: v.attributes.version, size: tarball.length, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    const row = (await versionRow(v.id))!;
    expect(row.status).toBe('ok');
    expect(row.upload_token_hash).toBeNull();
    expect(row.upload_lease_until).toBeNull();
    expect(row.blob_key).toMatch(/^modules\//);
    expect(JSON.parse(row.contents!).root.inputs.map((i: { name: string }) => i.name)).toEqual(['region']);
    expect(await ingestJobs()).toEqual([]);
    const versions = await t.api('GET', '/v1/modules/acme/net/aws/versions');
    expect(versions.json.modules[0].versions.map((x: { version: string }) => x.version)).toContain(v.attributes.version);
  });

  it('answers 202 with the version in reg_ingressing when the job outlasts TERRACE_INGEST_WAIT_MS, then the job publishes it', async () => {
    await t.running.jobs.stop();
    t.running.deps.config.ingestWaitMs = 150;
    try {
      const v = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
      const tarball = await moduleTarball();
      const up = await upload(v.links.upload, tarball);
      expect(up.status).toBe(202);
      expect(up.json.data).toEqual({
        id: v.id,
        type: 'registry-module-versions',
        attributes: { status: 'reg_ingressing', version: v.attributes.version, size: tarball.length, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      });
      const show = await t.api('GET', `${modPath}/versions/${v.attributes.version}`);
      expect(show.json.data.attributes.status).toBe('reg_ingressing');
      const mod = await t.api('GET', modPath);
      expect(mod.json.data.attributes['version-statuses']).toContainEqual({ version: v.attributes.version, status: 'reg_ingressing', error: '' });
      const listed = await t.api('GET', '/v1/modules/acme/net/aws/versions');
      expect(listed.json.modules[0].versions.map((x: { version: string }) => x.version)).not.toContain(v.attributes.version);
      // The URL is used up: a second PUT finds nothing.
      expect((await upload(v.links.upload, tarball)).status).toBe(404);

      expect(await t.running.jobs.runDue()).toBeGreaterThanOrEqual(1);
      expect((await t.api('GET', `${modPath}/versions/${v.attributes.version}`)).json.data.attributes.status).toBe('ok');
      // Running the job again changes nothing.
      const before = await versionRow(v.id);
      await ingestModuleVersion(t.running.deps, { versionId: v.id }, undefined as never);
      expect(await versionRow(v.id)).toEqual(before);
    } finally {
      t.running.deps.config.ingestWaitMs = 60_000;
      t.running.jobs.start();
    }
  });

  it('leaves no blob and no version when the version is deleted while it is being ingested', async () => {
    await t.running.jobs.stop();
    t.running.deps.config.ingestWaitMs = 0;
    try {
      const v = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
      const blobsBefore = moduleBlobs().length;
      expect((await upload(v.links.upload, await moduleTarball())).status).toBe(202);
      expect(moduleBlobs().length).toBe(blobsBefore + 1);
      expect((await t.api('DELETE', `${modPath}/${v.attributes.version}`)).status).toBe(204);
      await t.running.jobs.runDue();
      expect(await versionRow(v.id)).toBeUndefined();
      expect(moduleBlobs().length).toBe(blobsBefore);
      expect(await ingestJobs()).toEqual([]);
      expect(await waitForIngestion(t.running.deps, v.id, 0)).toBeUndefined();
    } finally {
      t.running.deps.config.ingestWaitMs = 60_000;
      t.running.jobs.start();
    }
  });
});

describe('submitArchive (what VCS publishing calls)', () => {
  it('refuses a hostile archive exactly as the upload URL does, keeping no blob', async () => {
    for (const [name, bytes] of HOSTILE) {
      const viaUpload = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
      const viaSubmit = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
      const blobsBefore = moduleBlobs().length;
      const up = await upload(viaUpload.links.upload, bytes);
      expect(up.status, name).toBe(422);
      const reason = up.json.errors[0].detail as string;
      expect(reason.length, name).toBeGreaterThan(5);

      await submitArchive(t.running.deps, viaSubmit.id, Readable.from([bytes]), { contentLength: bytes.length });
      const after = await waitForIngestion(t.running.deps, viaSubmit.id, 20_000);
      expect(after?.status, name).toBe('errored');
      expect(after?.error, name).toBe(reason);
      expect(after?.blob_key, name).toBeNull();
      expect((await versionRow(viaUpload.id))!.error, name).toBe(reason);
      expect(moduleBlobs().length, name).toBe(blobsBefore);
      const show = await t.api('GET', `${modPath}/versions/${viaSubmit.attributes.version}`);
      expect(show.json.data.attributes, name).toMatchObject({ status: 'errored', error: reason });
    }
    expect(await ingestJobs()).toEqual([]);
  });

  it('refuses an archive over the size limit with 413, as the upload does, and marks the version errored', async () => {
    const viaUpload = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
    const viaSubmit = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
    const big = Buffer.alloc(MAX + 1, 1);
    const blobsBefore = moduleBlobs().length;
    const up = await upload(viaUpload.links.upload, big);
    expect(up.status).toBe(413);
    const err = await submitArchive(t.running.deps, viaSubmit.id, Readable.from([big]), { contentLength: big.length }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(413);
    expect(err.detail).toBe(up.json.errors[0].detail);
    expect((await versionRow(viaSubmit.id))).toMatchObject({ status: 'errored', error: up.json.errors[0].detail, blob_key: null });
    expect(moduleBlobs().length).toBe(blobsBefore);
    // Streamed without a declared length, the limit is enforced on the bytes themselves.
    const streamed = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
    const err2 = await submitArchive(t.running.deps, streamed.id, Readable.from([big])).catch((e) => e);
    expect(err2).toMatchObject({ status: 413, detail: `the archive is over the limit of ${MAX} bytes (TERRACE_MAX_ARCHIVE_BYTES)` });
    expect(await versionRow(streamed.id)).toMatchObject({ status: 'errored', error: err2.detail, blob_key: null });
    expect(moduleBlobs().length).toBe(blobsBefore);
  });

  it('publishes a version being cloned, and refuses unknown versions (404) and versions not waiting for an archive (409) without writing', async () => {
    const v = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
    await db().updateTable('registry_module_versions').set({ status: 'cloning' }).where('id', '=', v.id).execute();
    expect((await t.api('GET', `${modPath}/versions/${v.attributes.version}`)).json.data.attributes.status).toBe('cloning');
    await submitArchive(t.running.deps, v.id, Readable.from([await moduleTarball()]));
    expect((await waitForIngestion(t.running.deps, v.id, 20_000))?.status).toBe('ok');

    const blobsBefore = moduleBlobs().length;
    const again = await submitArchive(t.running.deps, v.id, Readable.from([await moduleTarball()])).catch((e) => e);
    expect(again).toMatchObject({ status: 409, detail: `module version ${v.attributes.version} is ok: only a pending version takes an archive` });
    const missing = await submitArchive(t.running.deps, 'modver-nope', Readable.from([Buffer.from('x')])).catch((e) => e);
    expect(missing).toMatchObject({ status: 404, detail: 'module version modver-nope does not exist' });
    expect(moduleBlobs().length).toBe(blobsBefore);
    expect((await versionRow(v.id))!.status).toBe('ok');
  });
});

describe('the registry upkeep (leased, recurring)', () => {
  it('gives back dead uploads and removes old orphans, but never an upload in flight or a young blob', async () => {
    const deps = t.running.deps;
    const clock = t.clock as ManualClock;
    const now = clock.now();
    const iso = (ms: number) => new Date(now.getTime() + ms).toISOString();
    const dead = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
    const live = await createVersion(t, 'acme', 'net', 'aws', nextVersion());
    const deadKey = `modules/test/${dead.id}.tar.gz`;
    const liveKey = `modules/test/${live.id}.tar.gz`;
    // A process that died mid-upload (lease lapsed) and one still receiving (lease held).
    await claimUpload(deps.db, 'module', hashToken(tokenOf(dead.links.upload)), iso(0), { status: 'uploading', blob_key: deadKey, upload_lease_until: iso(-1000) });
    await claimUpload(deps.db, 'module', hashToken(tokenOf(live.links.upload)), iso(0), { status: 'uploading', blob_key: liveKey, upload_lease_until: iso(10 * 3_600_000) });
    await deps.blobs.put(deadKey, Readable.from([Buffer.from('partial')]));
    await deps.blobs.put(liveKey, Readable.from([Buffer.from('partial')]));
    const youngOrphan = 'modules/test/young.tar.gz';
    const oldOrphan = 'modules/test/old.tar.gz';
    await deps.blobs.put(youngOrphan, Readable.from([Buffer.from('in flight elsewhere')]));
    await deps.blobs.put(oldOrphan, Readable.from([Buffer.from('left by a crash')]));
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(path.join(t.dataDir, 'blobs', ...oldOrphan.split('/')), twoHoursAgo, twoHoursAgo);
    // Published archives are old too, and referenced: they stay.
    const published = moduleBlobs().filter((f) => !f.includes(`${path.sep}test${path.sep}`));
    for (const f of published) fs.utimesSync(f, twoHoursAgo, twoHoursAgo);

    // The upload repair runs every TERRACE_REGISTRY_UPKEEP_INTERVAL (300 s), the orphan sweep once
    // per TERRACE_ORPHAN_BLOB_GRACE_SECONDS (3600 s); both are recurring, leased jobs.
    await t.running.jobs.stop();
    try {
      await t.running.jobs.runDue();
      expect((await versionRow(dead.id))!.status).toBe('uploading');
      clock.advance(301_000);
      await t.running.jobs.runDue();
      expect(await versionRow(dead.id)).toMatchObject({ status: 'pending', blob_key: null, upload_lease_until: null });
      expect(await deps.blobs.stat(deadKey)).toBeNull();
      expect(await deps.blobs.stat(oldOrphan)).not.toBeNull();
      // The dead upload's URL works again.
      t.running.jobs.start();
      const up = await upload(dead.links.upload, await moduleTarball());
      expect(up.status).toBe(200);
      expect(up.json.data.attributes.status).toBe('ok');
      await t.running.jobs.stop();

      clock.advance(3_300_000);
      // Stored moments ago by the clock the sweep reads: within the grace window.
      const recent = new Date(clock.now().getTime() - 60_000);
      fs.utimesSync(path.join(t.dataDir, 'blobs', ...youngOrphan.split('/')), recent, recent);
      await t.running.jobs.runDue();
    } finally {
      t.running.jobs.start();
    }
    expect(await deps.blobs.stat(oldOrphan)).toBeNull();
    expect(await deps.blobs.stat(youngOrphan)).not.toBeNull();
    // The live upload's blob is old by now too, but its version references it.
    expect(await versionRow(live.id)).toMatchObject({ status: 'uploading', blob_key: liveKey });
    expect(await deps.blobs.stat(liveKey)).not.toBeNull();
    for (const f of published) expect(fs.existsSync(f)).toBe(true);
    for (const kind of ['registry.upkeep', 'registry.orphan-sweep']) {
      const job = await db().selectFrom('jobs').selectAll().where('kind', '=', kind).executeTakeFirstOrThrow();
      expect(job, kind).toMatchObject({ locked_until: null, last_error: null, attempts: 0 });
    }
  });
});

describe('a process without background jobs', () => {
  it('ingests its own uploads in the request and leaves no job row', async () => {
    const s = await startTestServer({ TERRACE_JOBS: 'false' });
    try {
      await createOrganization(s, 'solo');
      await createModule(s, 'solo', 'net', 'aws');
      const v = await createVersion(s, 'solo', 'net', 'aws', '1.0.0');
      const up = await upload(v.links.upload, await moduleTarball());
      expect(up.status).toBe(200);
      expect(up.json.data.attributes.status).toBe('ok');
      const jobs = await s.running.deps.db.selectFrom('jobs').select('kind').where('kind', '=', 'registry.ingest').execute();
      expect(jobs).toEqual([]);
    } finally {
      await s.close();
    }
  });
});

describe('a server process killed mid-publish', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  /** The fixture server process on dataDir; resolves with its URL and a way to wait for its output. */
  async function spawnChild(dataDir: string) {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'test/registry/fixtures/ingest-child.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', TERRACE_DATA_DIR: dataDir, TERRACE_ADMIN_TOKEN: ADMIN_TOKEN, TERRACE_LOG_LEVEL: 'silent', TERRACE_JOB_LEASE_SECONDS: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(proc);
    let out = '';
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    const until = async (re: RegExp) => {
      for (let i = 0; i < 600; i++) {
        const m = re.exec(out);
        if (m) return m;
        if (proc.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`the child never printed ${re}:\n${out}`);
    };
    const url = (await until(/"url":"(http:\/\/[^"]+)"/))[1]!;
    const kill = async () => {
      proc.kill('SIGKILL');
      await new Promise((r) => proc.once('exit', r));
    };
    return { url, until, kill };
  }

  it('gives a cut-off upload its URL back: status pending, no blob, and the URL publishes', async () => {
    const dataDir = tempDir('terrace-upload-kill-');
    const seed = await startTestServer({}, { dataDir });
    await createOrganization(seed, 'acme');
    await createModule(seed, 'acme', 'net', 'aws');
    const v = await createVersion(seed, 'acme', 'net', 'aws', '2.0.0');
    await seed.close();

    const child = await spawnChild(dataDir);
    const tarball = await moduleTarball();
    const u = new URL(`${child.url}/uploads/modules/${tokenOf(v.links.upload)}`);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'PUT', headers: { 'Content-Length': String(tarball.length) } });
    req.on('error', () => {});
    req.write(tarball.subarray(0, 10));
    const raw = new Database(path.join(dataDir, 'terrace.db'), { readonly: true });
    const status = () => (raw.prepare('select status, blob_key, upload_lease_until from registry_module_versions where id = ?').get(v.id) as { status: string; blob_key: string | null; upload_lease_until: string | null });
    for (let i = 0; i < 400 && status().status !== 'uploading'; i++) await new Promise((r) => setTimeout(r, 25));
    expect(status()).toMatchObject({ status: 'uploading', blob_key: expect.stringMatching(/^modules\//), upload_lease_until: expect.any(String) });
    await child.kill();
    raw.close();

    // The next process (its clock past the dead one's lease) repairs it at once.
    const next = await startTestServer({}, { dataDir, clock: new ManualClock(new Date(Date.now() + 60_000)) });
    try {
      const row = await next.running.deps.db.selectFrom('registry_module_versions').selectAll().where('id', '=', v.id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'pending', blob_key: null, upload_lease_until: null });
      expect(moduleBlobs(dataDir)).toEqual([]);
      const up = await upload(`${next.url}/uploads/modules/${tokenOf(v.links.upload)}`, tarball);
      expect(up.status).toBe(200);
      expect(up.json.data.attributes.status).toBe('ok');
    } finally {
      await next.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('leaves the version ingesting with its bytes stored; the next process finishes it once the lease lapses', async () => {
    const dataDir = tempDir('terrace-ingest-kill-');
    const seed = await startTestServer({}, { dataDir });
    await createOrganization(seed, 'acme');
    await createModule(seed, 'acme', 'net', 'aws');
    const v = await createVersion(seed, 'acme', 'net', 'aws', '3.0.0');
    await seed.close();

    const { url, until, kill } = await spawnChild(dataDir);
    const tarball = await moduleTarball({ 'main.tf': 'output "id" {\n  value = "x"\n}\n' });
    const put = fetch(`${url}/uploads/modules/${tokenOf(v.links.upload)}`, { method: 'PUT', body: tarball }).catch((e: unknown) => e);
    await until(/INGEST-STARTED/);
    await kill();
    expect(await put).toBeInstanceOf(Error);

    // What the dead process left: bytes stored, version ingesting, its job claimed by it.
    const raw = new Database(path.join(dataDir, 'terrace.db'), { readonly: true });
    const left = raw.prepare('select status, blob_key, size from registry_module_versions where id = ?').get(v.id) as { status: string; blob_key: string; size: number };
    const job = raw.prepare("select attempts, locked_until from jobs where kind = 'registry.ingest'").get() as { attempts: number; locked_until: string | null };
    raw.close();
    expect(left).toMatchObject({ status: 'ingesting', size: tarball.length });
    expect(fs.existsSync(path.join(dataDir, 'blobs', ...left.blob_key.split('/')))).toBe(true);
    expect(job.attempts).toBe(1);
    expect(job.locked_until).not.toBeNull();

    // The next process, its clock past the dead one's lease, takes the job over and publishes.
    const next = await startTestServer({}, { dataDir, clock: new ManualClock(new Date(Date.now() + 60_000)) });
    try {
      const done = await waitForIngestion(next.running.deps, v.id, 20_000);
      expect(done?.status).toBe('ok');
      expect(JSON.parse(done!.contents!).root.outputs.map((o: { name: string }) => o.name)).toEqual(['id']);
      const dl = await next.api('GET', '/v1/modules/acme/net/aws/3.0.0/download');
      expect(dl.status).toBe(204);
      expect(dl.headers.get('x-terraform-get')).toBeTruthy();
      expect(await next.running.deps.db.selectFrom('jobs').select('id').where('kind', '=', 'registry.ingest').execute()).toEqual([]);
    } finally {
      await next.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
