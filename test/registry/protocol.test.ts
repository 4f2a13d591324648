import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { createOrganization, moduleTarball, publish } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let outsider: { token: string };

beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'Acme');
  await createOrganization(t, 'hidden');
  outsider = await createUserWithToken(t, 'outsider');
  await publish(t, 'Acme', 'network', 'aws', '1.0.0', { 'main.tf': 'variable "cidr" {}\n' });
  await publish(t, 'Acme', 'network', 'aws', '1.1.0');
  await publish(t, 'Acme', 'network', 'aws', '2.0.0-beta.1');
  await publish(t, 'Acme', 'network', 'aws', '1.2.0+build.7');
  await publish(t, 'Acme', 'network', 'azurerm', '0.1.0');
  await publish(t, 'Acme', 'storage', 'aws', '3.0.0');
  await publish(t, 'hidden', 'secret', 'aws', '1.0.0');
});
afterAll(async () => {
  await t.close();
});

const versionsOf = (r: { json: any }) => r.json.modules[0].versions.map((v: { version: string }) => v.version).sort();

describe('GET …/versions', () => {
  it('lists every published version, pre-releases included, in the exact shape', async () => {
    const r = await t.api('GET', '/v1/modules/Acme/network/aws/versions');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')!.split(';')[0]).toBe('application/json');
    expect(r.json.modules).toHaveLength(1);
    expect(r.json.modules[0].source).toBe('Acme/network/aws');
    expect(versionsOf(r)).toEqual(['1.0.0', '1.1.0', '1.2.0+build.7', '2.0.0-beta.1']);
    for (const v of r.json.modules[0].versions) {
      expect(typeof v.version).toBe('string');
      expect(v.root).toEqual({ providers: [], dependencies: [] });
      expect(v.submodules).toEqual([]);
    }
  });

  it('matches namespace and name case-insensitively', async () => {
    const r = await t.api('GET', '/v1/modules/acme/NETWORK/aws/versions');
    expect(r.status).toBe(200);
    expect(versionsOf(r)).toHaveLength(4);
  });

  it('is 404 for unknown modules, upper-case providers and modules the caller may not see', async () => {
    for (const p of ['/v1/modules/Acme/nope/aws/versions', '/v1/modules/Acme/network/AWS/versions', '/v1/modules/nobody/x/aws/versions']) {
      const r = await t.api('GET', p);
      expect(r.status, p).toBe(404);
      expect(r.json).toEqual({ errors: [expect.any(String)] });
    }
    const hidden = await t.api('GET', '/v1/modules/hidden/secret/aws/versions', { token: outsider.token });
    expect(hidden.status).toBe(404);
  });

  it('is 401 without a token or with a bad one, in the registry error format', async () => {
    const anon = await t.api('GET', '/v1/modules/Acme/network/aws/versions', { token: null });
    expect(anon.status).toBe(401);
    expect(anon.json).toEqual({ errors: [expect.stringContaining('token')] });
    const bad = await t.api('GET', '/v1/modules/Acme/network/aws/versions', { token: 'nope.terrace.nope' });
    expect(bad.status).toBe(401);
  });
});

describe('GET …/:version/download', () => {
  it('answers 204 with a relative X-Terraform-Get ending in .tar.gz and carrying the archive sha256', async () => {
    const r = await t.api('GET', '/v1/modules/Acme/network/aws/1.1.0/download');
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    const get = r.headers.get('x-terraform-get')!;
    const sha256 = (await t.api('GET', '/api/v2/organizations/Acme/registry-modules/private/Acme/network/aws/version?module_version=1.1.0')).json.data.attributes.sha256;
    expect(sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(get).toMatch(/^\/archives\/modver-[A-Za-z0-9]+\/\d+\.[\w-]+\/network-aws-1\.1\.0\.tar\.gz\?checksum=sha256:[0-9a-f]{64}$/);
    expect(get.endsWith(`?checksum=sha256:${sha256}`)).toBe(true);
  });

  it('accepts the spellings clients normalise to', async () => {
    for (const v of ['v1.1.0', '1.2.0+build.7', '2.0.0-beta.1']) {
      expect((await t.api('GET', `/v1/modules/Acme/network/aws/${v}/download`)).status, v).toBe(204);
    }
    // Padded as go-version pads: 1.1 is 1.1.0, 01.1.0 is 1.1.0.
    expect((await t.api('GET', '/v1/modules/Acme/network/aws/1.1/download')).status).toBe(204);
    expect((await t.api('GET', '/v1/modules/Acme/network/aws/01.1.0/download')).status).toBe(204);
    expect((await t.api('GET', '/v1/modules/Acme/network/aws/9.9.9/download')).status).toBe(404);
    expect((await t.api('GET', '/v1/modules/Acme/network/aws/garbage/download')).status).toBe(404);
  });

  it('download-latest redirects 302 to the latest stable version', async () => {
    const r = await t.api('GET', '/v1/modules/acme/network/aws/download');
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/v1/modules/acme/network/aws/1.2.0+build.7/download');
  });
});

describe('the archive URL', () => {
  async function archiveUrl(): Promise<string> {
    const r = await t.api('GET', '/v1/modules/Acme/network/aws/1.0.0/download');
    return new URL(r.headers.get('x-terraform-get')!, `${t.url}/v1/modules/Acme/network/aws/1.0.0/download`).toString();
  }

  it('serves HEAD and GET without credentials, exact length, gzip bytes, no Content-Encoding', async () => {
    const url = await archiveUrl();
    const expected = await moduleTarball({ 'main.tf': 'variable "cidr" {}\n' });
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const get = await fetch(url, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(get.status).toBe(200);
    expect(get.headers.get('content-encoding')).toBeNull();
    expect(get.headers.get('content-type')).toBe('application/gzip');
    const body = Buffer.from(await get.arrayBuffer());
    expect(Number(get.headers.get('content-length'))).toBe(body.length);
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
    expect(body.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(body.length).toBe(expected.length);
  });

  it('answers ranges with 206 and unsatisfiable ones with 416', async () => {
    const url = await archiveUrl();
    const full = Buffer.from(await (await fetch(url)).arrayBuffer());
    const r = await fetch(url, { headers: { Range: 'bytes=10-19' } });
    expect(r.status).toBe(206);
    expect(r.headers.get('content-range')).toBe(`bytes 10-19/${full.length}`);
    expect(r.headers.get('content-length')).toBe('10');
    expect(Buffer.from(await r.arrayBuffer())).toEqual(full.subarray(10, 20));
    const tail = await fetch(url, { headers: { Range: 'bytes=-5' } });
    expect(Buffer.from(await tail.arrayBuffer())).toEqual(full.subarray(full.length - 5));
    const bad = await fetch(url, { headers: { Range: `bytes=${full.length}-` } });
    expect(bad.status).toBe(416);
    expect(bad.headers.get('content-range')).toBe(`bytes */${full.length}`);
  });

  it('refuses a tampered or expired URL the same way', async () => {
    const url = await archiveUrl();
    const withSegment = (i: number, f: (seg: string) => string) => {
      const u = new URL(url);
      const parts = u.pathname.split('/'); // ['', 'archives', versionId, 'expires.sig', file]
      parts[i] = f(parts[i]!);
      u.pathname = parts.join('/');
      return u.toString();
    };
    const tampered = withSegment(3, (cap) => cap.slice(0, -1) + (cap.endsWith('A') ? 'B' : 'A'));
    const otherVersion = withSegment(2, () => 'modver-AAAAAAAAAAAAAAAA');
    const later = withSegment(3, (cap) => cap.replace(/^\d+/, (n) => String(Number(n) + 1000)));
    const answers = [];
    for (const u of [tampered, otherVersion, later]) {
      const r = await fetch(u);
      answers.push([r.status, await r.text()]);
    }
    (t.clock as ManualClock).advance(301_000);
    const expired = await fetch(url);
    answers.push([expired.status, await expired.text()]);
    (t.clock as ManualClock).advance(-301_000);
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]![0]).toBe(404);
  });
});

describe('module lists and details', () => {
  it('lists the latest version of each visible module with exact meta', async () => {
    const r = await t.api('GET', '/v1/modules?limit=2', { token: outsider.token });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ meta: { limit: 2, current_offset: 0 }, modules: [] });
    const all = await t.api('GET', '/v1/modules/?limit=2');
    expect(all.json.meta).toEqual({ limit: 2, current_offset: 0, next_offset: 2, next_url: '/v1/modules/?limit=2&offset=2' });
    expect(all.json.modules).toHaveLength(2);
    const m = all.json.modules[0];
    expect(m).toMatchObject({ namespace: 'Acme', name: 'network', provider: 'aws', version: '1.2.0+build.7', verified: false, owner: '' });
    expect(m.id).toBe('Acme/network/aws/1.2.0+build.7');
    expect(m.published_at).toMatch(/Z$/);
    expect(typeof m.downloads).toBe('number');
    const page2 = await t.api('GET', '/v1/modules/?limit=2&offset=2');
    expect(page2.json.meta).toMatchObject({ limit: 2, current_offset: 2, prev_offset: 0 });
    expect(page2.json.meta.prev_url).toBe('/v1/modules/?limit=2');
  });

  it('clamps limit to 100, and rejects bad offset and limit', async () => {
    expect((await t.api('GET', '/v1/modules?limit=1000')).json.meta.limit).toBe(100);
    expect((await t.api('GET', '/v1/modules')).json.meta.limit).toBe(15);
    for (const q of ['limit=0', 'limit=x', 'offset=-1', 'offset=y']) {
      const r = await t.api('GET', `/v1/modules?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.json.errors).toHaveLength(1);
    }
  });

  it('filters by namespace, provider and verified', async () => {
    expect((await t.api('GET', '/v1/modules/acme')).json.modules).toHaveLength(3);
    expect((await t.api('GET', '/v1/modules/acme?provider=azurerm')).json.modules.map((m: any) => m.name)).toEqual(['network']);
    expect((await t.api('GET', '/v1/modules?verified=true')).json.modules).toEqual([]);
    expect((await t.api('GET', '/v1/modules?verified=yes')).json.modules.length).toBeGreaterThan(0);
  });

  it('searches, requires q, and never errors on punctuation', async () => {
    const r = await t.api('GET', '/v1/modules/search?q=netw');
    expect(r.json.modules.map((m: any) => `${m.name}/${m.provider}`)).toEqual(['network/aws', 'network/azurerm']);
    expect((await t.api('GET', '/v1/modules/search?q=network&provider=azurerm')).json.modules).toHaveLength(1);
    expect((await t.api('GET', '/v1/modules/search?q=network&namespace=hidden')).json.modules).toHaveLength(0);
    const missing = await t.api('GET', '/v1/modules/search');
    expect(missing.status).toBe(400);
    expect(missing.json.errors[0]).toContain('q');
    for (const q of ['"', '%25', '_', 'a AND (b', "'; drop table"]) {
      expect((await t.api('GET', `/v1/modules/search?q=${encodeURIComponent(q)}`)).status, q).toBe(200);
    }
  });

  it('shows latest per provider for namespace/name', async () => {
    const r = await t.api('GET', '/v1/modules/acme/network');
    expect(r.status).toBe(200);
    expect(r.json.modules.map((m: any) => `${m.provider}@${m.version}`)).toEqual(['aws@1.2.0+build.7', 'azurerm@0.1.0']);
  });

  it('shows module details for the latest and for a given version', async () => {
    const latest = await t.api('GET', '/v1/modules/acme/network/aws');
    expect(latest.status).toBe(200);
    expect(latest.json).toMatchObject({ version: '1.2.0+build.7', providers: ['aws', 'azurerm'] });
    expect(latest.json.versions).toEqual(['2.0.0-beta.1', '1.2.0+build.7', '1.1.0', '1.0.0']);
    expect(latest.json.root).toMatchObject({ path: '', empty: false, inputs: [{ name: 'x', required: true, default: '' }], outputs: [] });
    expect(latest.json.submodules).toEqual([]);
    expect(latest.json.examples).toEqual([]);
    const one = await t.api('GET', '/v1/modules/acme/network/aws/1.0.0');
    expect(one.json.version).toBe('1.0.0');
    expect(one.json.root.inputs.map((i: { name: string }) => i.name)).toEqual(['cidr']);
    expect((await t.api('GET', '/v1/modules/acme/network/aws/7.0.0')).status).toBe(404);
  });
});

describe('download counting', () => {
  it('counts each download once, exactly, under concurrency, in week/month/year/total', async () => {
    const clock = t.clock as ManualClock;
    await publish(t, 'Acme', 'counted', 'aws', '1.0.0');
    const summary = async () => (await t.api('GET', '/v2/modules/acme/counted/aws/downloads/summary')).json;
    expect(await summary()).toMatchObject({ data: { type: 'module-downloads-summary', attributes: { week: 0, month: 0, year: 0, total: 0 } } });
    expect(typeof (await summary()).data.id).toBe('string');
    await Promise.all(Array.from({ length: 40 }, () => t.api('GET', '/v1/modules/acme/counted/aws/1.0.0/download')));
    await t.api('GET', '/v1/modules/acme/counted/aws/9.9.9/download'); // a miss is not counted
    clock.advance(10 * 86_400_000);
    await Promise.all(Array.from({ length: 5 }, () => t.api('GET', '/v1/modules/acme/counted/aws/1.0.0/download')));
    expect((await summary()).data.attributes).toEqual({ week: 5, month: 45, year: 45, total: 45 });
    clock.advance(40 * 86_400_000);
    expect((await summary()).data.attributes).toEqual({ week: 0, month: 0, year: 45, total: 45 });
    clock.advance(400 * 86_400_000);
    expect((await summary()).data.attributes).toEqual({ week: 0, month: 0, year: 0, total: 45 });
    expect((await t.api('GET', '/v2/modules/acme/nope/aws/downloads/summary')).status).toBe(404);
    clock.advance(-450 * 86_400_000);
  });
});

describe('public read', () => {
  it('serves reads anonymously when TERRACE_PUBLIC_READ is on, but still refuses bad tokens', async () => {
    const pub = await startTestServer({ TERRACE_PUBLIC_READ: 'true' });
    try {
      await createOrganization(pub, 'open');
      await publish(pub, 'open', 'thing', 'aws', '1.0.0');
      expect((await pub.api('GET', '/v1/modules/open/thing/aws/versions', { token: null })).status).toBe(200);
      expect((await pub.api('GET', '/v1/modules/open/thing/aws/1.0.0/download', { token: null })).status).toBe(204);
      expect((await pub.api('GET', '/v1/modules/open/thing/aws/versions', { token: 'bad.terrace.bad' })).status).toBe(401);
      expect((await pub.api('POST', '/api/v2/organizations/open/registry-modules', { token: null, body: {} })).status).toBe(401);
    } finally {
      await pub.close();
    }
  });
});
