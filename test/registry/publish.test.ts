import { ManualClock } from '../../src/clock.js';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModule, createOrganization, createVersion, moduleTarball, publish, upload } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';

let t: TestServer;
let outsider: { token: string };
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_MAX_ARCHIVE_BYTES: String(64 * 1024), TERRACE_MAX_ARCHIVE_ENTRIES: '50' });
  await createOrganization(t, 'acme');
  await createOrganization(t, 'other');
  outsider = await createUserWithToken(t, 'outsider');
});
afterAll(async () => {
  await t.close();
});

async function counts() {
  const db = t.running.deps.db;
  const n = async (table: 'registry_modules' | 'registry_module_versions') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  return { modules: await n('registry_modules'), versions: await n('registry_module_versions'), blobs: blobFiles().length };
}

function blobFiles(): string[] {
  const root = path.join(t.dataDir, 'blobs', 'modules');
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.tar.gz'));
}

const modBody = (attrs: Record<string, unknown>) => ({ data: { type: 'registry-modules', attributes: attrs } });

describe('creating modules', () => {
  it('creates a private module with the HCP shape', async () => {
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules', {
      body: modBody({ name: 'vpc', provider: 'aws', 'registry-name': 'private', 'no-code': false }),
    });
    expect(r.status).toBe(201);
    const d = r.json.data;
    expect(d.type).toBe('registry-modules');
    expect(d.id).toMatch(/^mod-/);
    expect(d.attributes).toMatchObject({ name: 'vpc', namespace: 'acme', provider: 'aws', 'registry-name': 'private', status: 'pending', 'version-statuses': [] });
    expect(d.attributes['created-at']).toMatch(RFC3339);
    expect(d.relationships.organization.data).toEqual({ type: 'organizations', id: 'acme' });
    expect(d.links.self).toBe('/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws');
  });

  it.each([
    ['a duplicate (case-insensitive name)', { name: 'VPC', provider: 'aws' }, '/data/attributes/name'],
    ['an upper-case provider', { name: 'db', provider: 'AWS' }, '/data/attributes/provider'],
    ['a provider with a hyphen', { name: 'db', provider: 'aws-x' }, '/data/attributes/provider'],
    ['a name with a slash', { name: 'a/b', provider: 'aws' }, '/data/attributes/name'],
    ['a name ending in a hyphen', { name: 'db-', provider: 'aws' }, '/data/attributes/name'],
    ['a name of 65 characters', { name: 'a'.repeat(65), provider: 'aws' }, '/data/attributes/name'],
    ['a missing name', { provider: 'aws' }, '/data/attributes/name'],
    ['a numeric provider', { name: 'db', provider: 5 }, '/data/attributes/provider'],
    ['a public registry name', { name: 'db', provider: 'aws', 'registry-name': 'public' }, '/data/attributes/registry-name'],
  ])('refuses %s with 422 and creates nothing', async (_n, attrs, pointer) => {
    const before = await counts();
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules', { body: modBody(attrs) });
    expect(r.status).toBe(422);
    expect(r.json.errors[0].source.pointer).toBe(pointer);
    expect(await counts()).toEqual(before);
  });

  it('is 404 for organizations the caller may not manage, and 401 without a token', async () => {
    const before = await counts();
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules', { token: outsider.token, body: modBody({ name: 'x', provider: 'aws' }) });
    expect(r.status).toBe(404);
    const missing = await t.api('POST', '/api/v2/organizations/nope/registry-modules', { body: modBody({ name: 'x', provider: 'aws' }) });
    expect(missing.status).toBe(404);
    const anon = await t.api('POST', '/api/v2/organizations/acme/registry-modules', { token: null, body: modBody({ name: 'x', provider: 'aws' }) });
    expect(anon.status).toBe(401);
    expect(await counts()).toEqual(before);
  });
});

describe('versions and uploads', () => {
  it('creates a pending version whose upload URL publishes the tarball once', async () => {
    await createModule(t, 'acme', 'net', 'aws');
    const v = await createVersion(t, 'acme', 'net', 'aws', 'v1.2.0');
    expect(v.attributes).toMatchObject({ status: 'pending', version: '1.2.0', source: 'tfe-api' });
    expect(v.links.upload).toMatch(new RegExp(`^${t.url}/uploads/modules/`));
    const tarball = await moduleTarball({ 'main.tf': 'output "id" { value = 1 }\n' });
    const up = await upload(v.links.upload, tarball);
    expect(up.status).toBe(200);
    expect(up.json.data.attributes.status).toBe('ok');
    expect(up.json.data.attributes.size).toBe(tarball.length);

    const again = await upload(v.links.upload, tarball);
    expect(again.status).toBe(404);
    expect(again.json.errors[0].detail).toContain('already used');

    const show = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/net/aws/version?module_version=1.2.0');
    expect(show.status).toBe(200);
    expect(show.json.data.attributes).toMatchObject({ status: 'ok', version: '1.2.0', size: tarball.length });
    expect(show.json.data.attributes.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(show.json.data.attributes['published-at']).toMatch(RFC3339);
    const mod = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/net/aws');
    expect(mod.json.data.attributes.status).toBe('setup_complete');
    expect(mod.json.data.attributes['version-statuses']).toEqual([{ version: '1.2.0', status: 'ok', error: '' }]);
  });

  it('refuses an existing version, naming it', async () => {
    const before = await counts();
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules/private/acme/net/aws/versions', {
      body: { data: { type: 'registry-module-versions', attributes: { version: '1.2.0' } } },
    });
    expect(r.status).toBe(422);
    expect(r.json.errors[0].detail).toContain('1.2.0');
    expect(r.json.errors[0].detail).toContain('already exists');
    expect(await counts()).toEqual(before);
  });

  it.each([['1.2'], ['latest'], ['1.2.3.4'], ['01.2.3'], [''], ['1.0.0-']])('refuses version %j', async (version) => {
    const before = await counts();
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules/private/acme/net/aws/versions', {
      body: { data: { type: 'registry-module-versions', attributes: { version } } },
    });
    expect(r.status).toBe(422);
    expect(r.json.errors[0].source.pointer).toBe('/data/attributes/version');
    expect(await counts()).toEqual(before);
  });

  it('marks hostile or broken tarballs errored with the reason and keeps no blob', async () => {
    const cases: [string, Buffer, number, string][] = [
      ['not gzip', Buffer.from('just text, not an archive'), 422, 'gzip'],
      ['truncated', (await moduleTarball({ 'main.tf': 'x'.repeat(5000) })).subarray(0, 60), 422, 'truncated'],
      ['gzip of non-tar', zlib.gzipSync(Buffer.from('hello world '.repeat(100))), 422, 'tar'],
      ['empty', Buffer.alloc(0), 422, ''],
      ['too large', Buffer.alloc(70 * 1024, 1), 413, 'limit'],
    ];
    for (const [i, [name, body, status, words]] of cases.entries()) {
      const v = await createVersion(t, 'acme', 'net', 'aws', `2.0.${i}`);
      const before = blobFiles().length;
      const up = await upload(v.links.upload, body);
      expect(up.status, name).toBe(status);
      expect(up.json.errors[0].detail.toLowerCase(), name).toContain(words);
      expect(blobFiles().length, name).toBe(before);
      const show = await t.api('GET', `/api/v2/organizations/acme/registry-modules/private/acme/net/aws/versions/2.0.${i}`);
      expect(show.json.data.attributes.status, name).toBe('errored');
      expect(show.json.data.attributes.error.length, name).toBeGreaterThan(5);
    }
    // Errored versions are not served to Terraform.
    const versions = await t.api('GET', '/v1/modules/acme/net/aws/versions');
    expect(versions.json.modules[0].versions.map((v: { version: string }) => v.version)).toEqual(['1.2.0']);
  });

  it('lets an errored version be published again', async () => {
    const v = await createVersion(t, 'acme', 'net', 'aws', '2.0.0');
    expect((await upload(v.links.upload, await moduleTarball())).status).toBe(200);
  });

  it('lets only one of two concurrent PUTs publish', async () => {
    const v = await createVersion(t, 'acme', 'net', 'aws', '5.0.0');
    const tarball = await moduleTarball();
    const results = await Promise.all([upload(v.links.upload, tarball), upload(v.links.upload, tarball)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 404]);
  });

  it('returns an interrupted upload to pending with no blob, and a retry then succeeds', async () => {
    const v = await createVersion(t, 'acme', 'net', 'aws', '6.0.0');
    const tarball = await moduleTarball({ 'main.tf': (await import('node:crypto')).randomBytes(30_000).toString('base64') });
    const before = blobFiles().length;
    const http = await import('node:http');
    const u = new URL(v.links.upload);
    await new Promise<void>((resolve) => {
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'PUT', headers: { 'Content-Length': String(tarball.length) } });
      req.on('error', () => resolve());
      req.write(tarball.subarray(0, 1000));
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 100);
    });
    let status = '';
    for (let i = 0; i < 50 && status !== 'pending'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      status = (await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/net/aws/versions/6.0.0')).json.data.attributes.status;
    }
    expect(status).toBe('pending');
    expect(blobFiles().length).toBe(before);
    expect((await upload(v.links.upload, tarball)).status).toBe(200);
  });

  it('refuses a body shorter than its Content-Length without publishing', async () => {
    const v = await createVersion(t, 'acme', 'net', 'aws', '7.0.0');
    const res = await t.api('PUT', new URL(v.links.upload).pathname, { token: null, rawBody: Buffer.from('abc'), headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': '3' } });
    expect(res.status).toBe(422);
  });

  it('refuses an unknown or expired upload URL without publishing', async () => {
    const before = await counts();
    expect((await upload(`${t.url}/uploads/modules/made-up-token`, await moduleTarball())).status).toBe(404);
    const v = await createVersion(t, 'acme', 'net', 'aws', '3.0.0');
    (t.clock as import('../../src/clock.js').ManualClock).advance(3601_000);
    const up = await upload(v.links.upload, await moduleTarball());
    expect(up.status).toBe(404);
    const after = await counts();
    expect(after.blobs).toBe(before.blobs);
  });

  it('is 404 for another organization or a module the caller may not see', async () => {
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules/private/acme/net/aws/versions', {
      token: outsider.token,
      body: { data: { type: 'registry-module-versions', attributes: { version: '9.0.0' } } },
    });
    expect(r.status).toBe(404);
    const cross = await t.api('POST', '/api/v2/organizations/other/registry-modules/private/acme/net/aws/versions', {
      body: { data: { type: 'registry-module-versions', attributes: { version: '9.0.0' } } },
    });
    expect(cross.status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/net/aws', { token: outsider.token })).status).toBe(404);
  });
});

describe('listing and deleting', () => {
  it('lists an organization\'s modules with paging', async () => {
    const r = await t.api('GET', '/api/v2/organizations/acme/registry-modules?page%5Bsize%5D=1');
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(1);
    expect(r.json.meta.pagination['total-count']).toBeGreaterThanOrEqual(2);
    expect((await t.api('GET', '/api/v2/organizations/acme/registry-modules', { token: outsider.token })).status).toBe(404);
  });

  it('deletes a version and its blob', async () => {
    await publish(t, 'acme', 'gone', 'aws', '1.0.0');
    await publish(t, 'acme', 'gone', 'aws', '1.1.0');
    const before = blobFiles().length;
    const del = await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/gone/aws/1.1.0');
    expect(del.status).toBe(204);
    expect(blobFiles().length).toBe(before - 1);
    const versions = await t.api('GET', '/v1/modules/acme/gone/aws/versions');
    expect(versions.json.modules[0].versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
    expect((await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/gone/aws/1.1.0')).status).toBe(404);
  });

  it('deletes a module with all its versions and blobs', async () => {
    await publish(t, 'acme', 'gone', 'gcp', '1.0.0');
    const before = await counts();
    expect((await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/gone/aws', { token: outsider.token })).status).toBe(404);
    expect(await counts()).toEqual(before);
    const del = await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/gone');
    expect(del.status).toBe(204);
    const after = await counts();
    expect(after.modules).toBe(before.modules - 2);
    expect(after.blobs).toBe(before.blobs - 2);
    expect((await t.api('GET', '/v1/modules/acme/gone/aws/versions')).status).toBe(404);
  });
});

describe('crash recovery', () => {
  it('on restart, resets interrupted uploads before serving; orphaned blobs go by the recurring sweep, not at start', async () => {
    const dataDir = t.dataDir;
    const v = await createVersion(t, 'acme', 'net', 'aws', '4.0.0');
    const db = t.running.deps.db;
    // Simulate a process killed after the blob landed but before the version was published.
    const key = `modules/orphan/${'x'}.tar.gz`;
    await t.running.deps.blobs.put(key, (await import('node:stream')).Readable.from([Buffer.from('orphan')]));
    await db.updateTable('registry_module_versions').set({ status: 'uploading', blob_key: `modules/partial/${v.id}.tar.gz` }).where('id', '=', v.id).execute();
    await t.running.deps.blobs.put(`modules/partial/${v.id}.tar.gz`, (await import('node:stream')).Readable.from([Buffer.from('partial')]));
    await t.running.close();
    // Orphans are removed only once older than the grace window (an upload in another instance may
    // not have recorded its blob yet); the interrupted upload has no lease, so it is stale at once.
    (t.clock as ManualClock).advance(3601 * 1000);
    const { startServer } = await import('../../src/server.js');
    const { loadConfig } = await import('../../src/config.js');
    // Jobs off, so nothing but start-up itself has run when the server answers.
    const restarted = await startServer(
      loadConfig({ PORT: '0', TERRACE_DATA_DIR: dataDir, TERRACE_LOG_LEVEL: 'silent', TERRACE_ADMIN_TOKEN: t.adminToken, TERRACE_JOBS: 'false', ...storeEnv(dataDir) }),
      { clock: t.clock },
    );
    try {
      const row = await restarted.deps.db.selectFrom('registry_module_versions').selectAll().where('id', '=', v.id).executeTakeFirstOrThrow();
      expect(row.status).toBe('pending');
      expect(row.blob_key).toBeNull();
      expect(await restarted.deps.blobs.stat(`modules/partial/${v.id}.tar.gz`)).toBeNull();
      // Start-up does not list the blob store: the orphan is still there.
      expect(await restarted.deps.blobs.stat(key)).not.toBeNull();
      // The orphan sweep is a recurring job, due once per grace window: it removes the orphan.
      const sweep = await restarted.deps.db.selectFrom('jobs').select(['run_at']).where('kind', '=', 'registry.orphan-sweep').executeTakeFirstOrThrow();
      expect(new Date(sweep.run_at).getTime()).toBeLessThanOrEqual(t.clock.now().getTime());
      await restarted.jobs.runDue();
      expect(await restarted.deps.blobs.stat(key)).toBeNull();
      const after = await restarted.deps.db.selectFrom('jobs').select(['run_at', 'last_error']).where('kind', '=', 'registry.orphan-sweep').executeTakeFirstOrThrow();
      expect(after.last_error).toBeNull();
      expect(new Date(after.run_at).getTime()).toBe(t.clock.now().getTime() + 3600 * 1000);
    } finally {
      await restarted.close();
    }
  });
});
