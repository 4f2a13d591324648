import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, startRoundRobin, type RoundRobin, type ServerProcess } from '../helpers/instances.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { moduleTarball } from '../helpers/registry.js';
import { startS3Fake, type S3Fake } from '../helpers/s3.js';
import { ADMIN_TOKEN, jsonOrUndefined, tempDir } from '../helpers/server.js';
import { postgresAdminUrl, testStore } from '../helpers/store.js';

/**
 * Two Terrace processes on one PostgreSQL database and one S3-compatible store, behind one
 * address (a round-robin proxy, as a load balancer would be). postgres project only.
 */

const H = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/vnd.api+json', Accept: 'application/vnd.api+json' };

let s3: S3Fake;
let dropDb: () => Promise<void>;
let proxy: RoundRobin;
let proxyUrl: string;
let targets: string[];
let served: Map<string, number>;
const instances: ServerProcess[] = [];

async function call(base: string, method: string, p: string, body?: unknown) {
  const res = await fetch(base + p, { method, headers: H, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: jsonOrUndefined(text), text };
}

const versionBody = (version: string) => ({ data: { type: 'registry-module-versions', attributes: { version } } });
const VERSIONS = '/api/v2/organizations/acme/registry-modules/private/acme/net/aws/versions';

describe.skipIf(testStore !== 'postgres')('two instances on one PostgreSQL and one S3 store', () => {
  beforeAll(async () => {
    s3 = await startS3Fake();
    const db = await createTestDatabase(postgresAdminUrl());
    dropDb = db.drop;
    proxy = await startRoundRobin();
    ({ url: proxyUrl, targets, served } = proxy);
    const env = {
      ...s3.env,
      TERRACE_DATABASE_URL: db.url,
      TERRACE_SECRET_KEY: 'one-key-shared-by-both-instances-0123456789',
      TERRACE_PUBLIC_URL: proxyUrl,
    };
    // One after the other, then together: the second start finds the schema migrated.
    instances.push(await spawnServer(tempDir(), env));
    instances.push(await spawnServer(tempDir(), env));
    targets.push(...instances.map((i) => i.url));
    expect((await call(proxyUrl, 'POST', '/api/v2/organizations', { data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@example.com' } } })).status).toBe(201);
    const mod = await call(proxyUrl, 'POST', '/api/v2/organizations/acme/registry-modules', {
      data: { type: 'registry-modules', attributes: { name: 'net', provider: 'aws', 'registry-name': 'private' } },
    });
    expect(mod.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    for (const i of instances) await i.kill();
    await proxy?.close();
    await dropDb?.();
    await s3?.close();
  });

  it('publishes through one instance and serves the archive through the other', async () => {
    const [a, b] = instances as [ServerProcess, ServerProcess];
    const v = await call(a.url, 'POST', VERSIONS, versionBody('0.1.0'));
    expect(v.status).toBe(201);
    const uploadUrl = new URL(v.json.data.links.upload as string);
    const tarball = await moduleTarball({ 'main.tf': 'variable "region" {}\n', 'README.md': '# net\n\nShared networks.\n' });
    // The URL names the proxy; send it to instance A itself.
    const put = await fetch(a.url + uploadUrl.pathname + uploadUrl.search, { method: 'PUT', body: tarball });
    expect(put.status).toBe(200);

    const dl = await call(b.url, 'GET', '/v1/modules/acme/net/aws/0.1.0/download');
    expect(dl.status).toBe(204);
    const archive = new URL(dl.headers.get('x-terraform-get')!, b.url);
    // A signed URL made by B opens on A (one shared key), and the bytes are the ones A stored.
    const target = archive.origin === new URL(proxyUrl).origin ? a.url + archive.pathname + archive.search : archive.toString();
    const got = await fetch(target);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer())).toEqual(tarball);
  });

  it('publishes different versions of one module concurrently through both, losing none', async () => {
    const versions = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0', '1.5.0'];
    const tarball = await moduleTarball();
    const results = await Promise.all(
      versions.map(async (version) => {
        const v = await call(proxyUrl, 'POST', VERSIONS, versionBody(version));
        if (v.status !== 201) return v.status;
        return (await fetch(v.json.data.links.upload, { method: 'PUT', body: tarball })).status;
      }),
    );
    expect(results).toEqual(versions.map(() => 200));
    // The module's cached version list (rewritten by every publish) has every one of them.
    for (const base of targets) {
      const listed = await call(base, 'GET', '/v1/modules/acme/net/aws/versions');
      expect(listed.status).toBe(200);
      const got = listed.json.modules[0].versions.map((x: { version: string }) => x.version).sort();
      expect(got).toEqual(['0.1.0', ...versions].sort());
    }
    const latest = await call(proxyUrl, 'GET', '/v1/modules/acme/net/aws');
    expect(latest.json.version).toBe('1.5.0');
    expect(served.get(new URL(targets[0]!).origin)).toBeGreaterThan(3);
    expect(served.get(new URL(targets[1]!).origin)).toBeGreaterThan(3);
  });

  it('creates one version once when both instances are asked at the same moment', async () => {
    const [a, b] = instances as [ServerProcess, ServerProcess];
    const attempts = await Promise.all([a, b, a, b].map((i) => call(i.url, 'POST', VERSIONS, versionBody('2.0.0'))));
    const statuses = attempts.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 422, 422, 422]);
    for (const r of attempts.filter((x) => x.status === 422)) expect(r.json.errors[0].detail).toMatch(/2\.0\.0/);
  });

  it('takes a one-time upload URL once, whichever instance each PUT reaches', async () => {
    const v = await call(proxyUrl, 'POST', VERSIONS, versionBody('3.0.0'));
    expect(v.status).toBe(201);
    const u = new URL(v.json.data.links.upload as string);
    const tarball = await moduleTarball();
    const puts = await Promise.all(instances.flatMap((i) => [i, i]).map((i) => fetch(i.url + u.pathname + u.search, { method: 'PUT', body: tarball })));
    const statuses = puts.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s !== 200).every((s) => s >= 400 && s < 500)).toBe(true);
    // Used up: neither instance takes it again.
    for (const i of instances) expect((await fetch(i.url + u.pathname + u.search, { method: 'PUT', body: tarball })).status).toBeGreaterThanOrEqual(400);
  });

  it('counts every download served by either instance, exactly', async () => {
    // Each instance shows its own downloads at once and the other's once they are flushed (every
    // TERRACE_DOWNLOAD_FLUSH_MS): wait, bounded, until both instances agree.
    const totals = async () => Promise.all(targets.map(async (base) => (await call(base, 'GET', '/v2/modules/acme/net/aws/downloads/summary')).json.data.attributes.total as number));
    const agreed = async (want?: number) => {
      for (let i = 0; ; i++) {
        const seen = await totals();
        if (seen.every((s) => s === seen[0] && (want === undefined || s >= want))) return seen;
        if (i >= 400) return seen;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const before = (await agreed())[0]!;
    const n = 40;
    const downloads = await Promise.all(Array.from({ length: n }, () => call(proxyUrl, 'GET', '/v1/modules/acme/net/aws/1.0.0/download')));
    expect(downloads.map((d) => d.status)).toEqual(downloads.map(() => 204));
    // HEAD is not a download.
    expect((await fetch(`${proxyUrl}/v1/modules/acme/net/aws/1.0.0/download`, { method: 'HEAD', headers: H })).status).toBe(204);
    expect(await agreed(before + n)).toEqual(targets.map(() => before + n));
  });

  it('serves on when one instance is killed, and the readiness of the survivor holds', async () => {
    const [a, b] = instances as [ServerProcess, ServerProcess];
    await a.kill();
    targets.splice(0, targets.length, b.url);
    expect((await call(proxyUrl, 'GET', '/readyz')).status).toBe(200);
    const listed = await call(proxyUrl, 'GET', '/v1/modules/acme/net/aws/versions');
    expect(listed.status).toBe(200);
    expect(listed.json.modules[0].versions).toHaveLength(8);
  });
});
