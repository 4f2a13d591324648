import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization, publish } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

// HCP serves the module registry protocol also under /api/registry/v1/modules/, where go-tfe's
// ReadTerraformRegistryModule reads (GET …/:namespace/:name/:provider/:version, decoded with
// encoding/json into TerraformRegistryModule). Terrace serves it there with the same handlers.
let t: TestServer;
let outsider: { token: string };

beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  await createOrganization(t, 'hidden');
  outsider = await createUserWithToken(t, 'outsider');
  await publish(t, 'acme', 'network', 'aws', '1.0.0', { 'main.tf': 'variable "cidr" { type = string }\n' });
  await publish(t, 'acme', 'network', 'aws', '1.1.0');
  await publish(t, 'hidden', 'secret', 'aws', '1.0.0');
});
afterAll(async () => {
  await t.close();
});

const goTfe = { headers: { Accept: 'application/json', 'User-Agent': 'go-tfe' } };
const total = async () => (await t.api('GET', '/v2/modules/acme/network/aws/downloads/summary')).json.data.attributes.total as number;

describe('/api/registry/v1/modules/ answers as /v1/modules/ does', () => {
  it.each([
    '',
    '/',
    '/search?q=network',
    '/acme',
    '/acme/network',
    '/acme/network/aws',
    '/acme/network/aws/versions',
    '/acme/network/aws/1.0.0',
    '/ACME/Network/aws/1.1.0',
  ])('GET …%s', async (suffix) => {
    const mounted = await t.api('GET', `/api/registry/v1/modules${suffix}`, goTfe);
    const native = await t.api('GET', `/v1/modules${suffix}`, goTfe);
    expect(native.status).toBe(200);
    expect(mounted.status).toBe(200);
    expect(mounted.headers.get('content-type')!.split(';')[0]).toBe('application/json');
    const strip = (j: any) => JSON.parse(JSON.stringify(j).replaceAll('/api/registry/v1/modules/', '/v1/modules/'));
    expect(strip(mounted.json)).toEqual(native.json);
  });

  it('decodes as go-tfe TerraformRegistryModule (types of every field it reads)', async () => {
    const r = await t.api('GET', '/api/registry/v1/modules/acme/network/aws/1.0.0', goTfe);
    const m = r.json;
    for (const k of ['id', 'owner', 'namespace', 'name', 'version', 'provider', 'description', 'source', 'published_at']) expect(typeof m[k], k).toBe('string');
    expect(m).toMatchObject({ id: 'acme/network/aws/1.0.0', namespace: 'acme', name: 'network', provider: 'aws', version: '1.0.0', downloads: 0, verified: false });
    expect(m.published_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(m.root.inputs).toEqual([expect.objectContaining({ name: 'cidr', type: 'string', required: true })]);
    expect(m.providers).toEqual(['aws']);
    expect([...m.versions].sort()).toEqual(['1.0.0', '1.1.0']);
  });

  it('answers the download with 204 and X-Terraform-Get carrying the archive checksum, and counts it', async () => {
    const before = await total();
    const r = await t.api('GET', '/api/registry/v1/modules/acme/network/aws/1.0.0/download');
    expect(r.status).toBe(204);
    const get = r.headers.get('x-terraform-get')!;
    const sha256 = (await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/network/aws/version?module_version=1.0.0')).json.data.attributes.sha256;
    expect(get).toMatch(new RegExp(`^/archives/modver-[^/]+/\\d+\\.[^/]+/network-aws-1\\.0\\.0\\.tar\\.gz\\?checksum=sha256:${sha256}$`));
    expect(await total()).toBe(before + 1);
    const archive = await fetch(new URL(get, t.url));
    expect(archive.status).toBe(200);
  });

  it('redirects the latest download under the mount it was asked at', async () => {
    const r = await t.api('GET', '/api/registry/v1/modules/acme/network/aws/download');
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/api/registry/v1/modules/acme/network/aws/1.1.0/download');
  });

  it('refuses in the registry error format: 404 for what the caller may not see, 401 without a token, 400 for a search without q', async () => {
    for (const [path, token, status] of [
      ['/api/registry/v1/modules/hidden/secret/aws/1.0.0', outsider.token, 404],
      ['/api/registry/v1/modules/acme/nope/aws/versions', t.adminToken, 404],
      ['/api/registry/v1/modules/acme/network/aws/9.9.9/download', t.adminToken, 404],
      ['/api/registry/v1/modules/acme/network/aws/versions', null, 401],
      ['/api/registry/v1/modules/search', t.adminToken, 400],
      ['/api/registry/v1/nothing-here', t.adminToken, 404],
    ] as const) {
      const r = await t.api('GET', path, { token });
      expect(r.status, path).toBe(status);
      expect(r.json, path).toEqual({ errors: [expect.any(String)] });
    }
    const search = await t.api('GET', '/api/registry/v1/modules/search');
    expect(search.json.errors[0]).toBe('the query parameter q is required, for example /api/registry/v1/modules/search?q=network');
  });
});

describe('HEAD on a download endpoint', () => {
  it.each(['/v1/modules', '/api/registry/v1/modules'])('answers as GET under %s but does not count a download; GET does', async (base) => {
    const before = await total();
    const head = await t.api('HEAD', `${base}/acme/network/aws/1.1.0/download`);
    expect(head.status).toBe(204);
    expect(head.headers.get('x-terraform-get')).toContain('checksum=sha256:');
    expect(await total()).toBe(before);
    const get = await t.api('GET', `${base}/acme/network/aws/1.1.0/download`);
    expect(get.status).toBe(204);
    expect(await total()).toBe(before + 1);
  });
});
