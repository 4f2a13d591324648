import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createOrganization, moduleTarball, publish } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The requests go-tfe 1.x's RegistryModules sends (registry_module.go), byte for byte in method,
 * path, JSON:API body and headers. A go-tfe 1.x binary cannot be built here (Debian ships 0.11),
 * so these drive its exact request shapes; test/gotfe drives the real 0.11 client.
 */
let t: TestServer;
let outsider: { token: string };
let member: { username: string; token: string };
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

// go-tfe's client: JSON:API media type both ways, its User-Agent, a bearer token.
const GO_TFE = { 'Content-Type': 'application/vnd.api+json', Accept: 'application/vnd.api+json', 'User-Agent': 'go-tfe' };
const call = (method: string, p: string, body?: unknown, token: string | null = t.adminToken) =>
  t.api(method, `/api/v2/${p}`, { token, headers: GO_TFE, ...(body === undefined ? {} : { body }) });

// RegistryModuleCreateVersionOptions: CommitSHA is a *string without omitempty, so nil is null.
const versionBody = (version: string) => ({ data: { type: 'registry-module-versions', attributes: { version, 'commit-sha': null } } });

beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  await createOrganization(t, 'other');
  outsider = await createUserWithToken(t, 'outsider');
  member = await createUserWithToken(t, 'member');
  await addMember(t, 'acme', member);
});
afterAll(async () => {
  await t.close();
});

async function state() {
  const db = t.running.deps.db;
  const rows = async (table: 'registry_modules' | 'registry_module_versions') => db.selectFrom(table).selectAll().orderBy('id').execute();
  const root = path.join(t.dataDir, 'blobs');
  const blobs = fs.existsSync(root) ? (fs.readdirSync(root, { recursive: true }) as string[]).sort() : [];
  return JSON.stringify({ modules: await rows('registry_modules'), versions: await rows('registry_module_versions'), blobs });
}

describe('Create, then CreateVersion at registry-modules/:organization/:name/:provider/versions, then Upload', () => {
  let moduleId: string;

  it('creates the module as RegistryModules.Create sends it', async () => {
    const r = await call('POST', 'organizations/acme/registry-modules', { data: { type: 'registry-modules', attributes: { name: 'vpc', provider: 'aws', 'registry-name': 'private' } } });
    expect(r.status).toBe(201);
    moduleId = r.json.data.id;
    expect(moduleId).toMatch(/^mod-/);
  });

  it('creates a pending version with an upload link, as on the organizations/… path', async () => {
    const r = await call('POST', 'registry-modules/acme/vpc/aws/versions', versionBody('1.0.0'));
    expect(r.status).toBe(201);
    expect(r.headers.get('content-type')!.split(';')[0]).toBe('application/vnd.api+json');
    const d = r.json.data;
    expect(d.type).toBe('registry-module-versions');
    expect(typeof d.id).toBe('string');
    expect(d.attributes).toMatchObject({ source: 'tfe-api', status: 'pending', version: '1.0.0' });
    expect(d.attributes['created-at']).toMatch(RFC3339);
    expect(d.attributes['updated-at']).toMatch(RFC3339);
    expect(d.relationships['registry-module'].data).toEqual({ type: 'registry-modules', id: moduleId });
    expect(d.links.upload).toMatch(new RegExp(`^${t.url}/uploads/modules/`));

    // UploadTarGzip: a foreign PUT of the tar.gz with Content-Type application/octet-stream.
    const tarball = await moduleTarball({ 'main.tf': 'output "id" { value = 1 }\n' });
    const up = await fetch(d.links.upload, { method: 'PUT', body: tarball, headers: { 'Content-Type': 'application/octet-stream', 'User-Agent': 'go-tfe' } });
    expect(up.status).toBe(200);
    const versions = await t.api('GET', '/v1/modules/acme/vpc/aws/versions');
    expect(versions.json.modules[0].versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
  });

  it.each([
    ['an existing version', versionBody('1.0.0'), 422, 'already exists'],
    ['a version that is not semver', versionBody('1.0'), 422, 'not valid semantic versioning'],
    ['the wrong type', { data: { type: 'registry-modules', attributes: { version: '2.0.0' } } }, 422, 'data.type must be'],
    ['no body', undefined, 422, 'a JSON request body is required'],
  ])('refuses %s and changes nothing', async (_n, body, status, words) => {
    const before = await state();
    const r = await call('POST', 'registry-modules/acme/vpc/aws/versions', body);
    expect(r.status).toBe(status);
    expect(r.json.errors[0].detail).toContain(words);
    expect(await state()).toBe(before);
  });

  it('is 404 for callers who may not publish (even with a bad body), unknown modules and organizations; 401 without a token', async () => {
    const before = await state();
    for (const [p, token, body] of [
      ['registry-modules/acme/vpc/aws/versions', outsider.token, versionBody('2.0.0')],
      ['registry-modules/acme/vpc/aws/versions', outsider.token, { nonsense: true }],
      ['registry-modules/acme/vpc/aws/versions', member.token, versionBody('2.0.0')],
      ['registry-modules/acme/nope/aws/versions', t.adminToken, versionBody('2.0.0')],
      ['registry-modules/nope/vpc/aws/versions', t.adminToken, versionBody('2.0.0')],
    ] as const) {
      const r = await call('POST', p, body, token);
      expect(r.status, p).toBe(404);
    }
    expect((await call('POST', 'registry-modules/acme/vpc/aws/versions', versionBody('2.0.0'), null)).status).toBe(401);
    expect(await state()).toBe(before);
  });

  it('reads the module at registry-modules/show/:organization/:name/:provider (older Read), at registry-modules/:id (Read by ID) and at the private path, identically', async () => {
    const show = await call('GET', 'registry-modules/show/acme/vpc/aws');
    const byId = await call('GET', `registry-modules/${moduleId}`);
    const priv = await call('GET', 'organizations/acme/registry-modules/private/acme/vpc/aws');
    expect(show.status).toBe(200);
    expect(byId.status).toBe(200);
    expect(show.json).toEqual(priv.json);
    expect(byId.json).toEqual(priv.json);
    expect(priv.json.data.attributes).toMatchObject({ name: 'vpc', provider: 'aws', namespace: 'acme', 'registry-name': 'private', status: 'setup_complete', 'no-code': false });
    expect(priv.json.data.attributes['version-statuses']).toEqual([{ version: '1.0.0', status: 'ok', error: '' }]);
    // A member reads it; can-delete says what go-tfe may offer.
    const asMember = await call('GET', `registry-modules/${moduleId}`, undefined, member.token);
    expect(asMember.status).toBe(200);
    expect(asMember.json.data.attributes.permissions).toEqual({ 'can-delete': false, 'can-resync': false, 'can-retry': false });
    for (const [p, token] of [
      ['registry-modules/show/acme/vpc/aws', outsider.token],
      [`registry-modules/${moduleId}`, outsider.token],
      ['registry-modules/mod-doesnotexist', t.adminToken],
      ['registry-modules/show/acme/vpc/gcp', t.adminToken],
    ] as const) {
      expect((await call('GET', p, undefined, token)).status, p).toBe(404);
    }
  });

  it('reads the version as ReadVersion does (…/version?module_version=)', async () => {
    const r = await call('GET', 'organizations/acme/registry-modules/private/acme/vpc/aws/version?module_version=1.0.0');
    expect(r.status).toBe(200);
    expect(r.json.data.attributes).toMatchObject({ status: 'ok', version: '1.0.0' });
  });

  it('Update: accepts what describes an API-published module, refuses the rest after authorizing', async () => {
    const p = 'organizations/acme/registry-modules/private/acme/vpc/aws';
    const before = await state();
    const ok = await call('PATCH', p, { data: { type: 'registry-modules', attributes: { 'no-code': false, 'test-config': { 'tests-enabled': false } } } });
    expect(ok.status).toBe(200);
    expect(ok.json.data.id).toBe(moduleId);
    for (const [attrs, pointer, words] of [
      [{ 'no-code': true }, '/data/attributes/no-code', 'no-code provisioning'],
      [{ 'test-config': { 'tests-enabled': true } }, '/data/attributes/test-config/tests-enabled', 'module tests'],
      [{ 'vcs-repo': { branch: 'main' } }, '/data/attributes/vcs-repo', 'VCS repository'],
      [{ 'no-code': 'yes' }, '/data/attributes/no-code', 'no-code'],
    ] as const) {
      const r = await call('PATCH', p, { data: { type: 'registry-modules', attributes: attrs } });
      expect(r.status, JSON.stringify(attrs)).toBe(422);
      expect(r.json.errors[0].source.pointer).toBe(pointer);
      expect(r.json.errors[0].detail).toContain(words);
    }
    // Who may not act learns nothing from the body.
    expect((await call('PATCH', p, { data: { type: 'registry-modules', attributes: { 'no-code': true } } }, member.token)).status).toBe(404);
    expect((await call('PATCH', p, 'not json', outsider.token)).status).toBe(404);
    expect(await state()).toBe(before);
  });
});

describe('VCS calls with a token that is not the organization\'s, or on a module without VCS, answer 422', () => {
  const vcsBody = { data: { type: 'registry-modules', attributes: { 'vcs-repo': { identifier: 'acme/terraform-aws-vpc', 'oauth-token-id': 'ot-x', 'display-identifier': 'acme/terraform-aws-vpc' } } } };

  it.each([
    ['POST', 'registry-modules', vcsBody],
    ['POST', 'organizations/acme/registry-modules/vcs', vcsBody],
    ['GET', 'organizations/acme/registry-modules/private/acme/vpc/aws/commits', undefined],
  ])('%s %s', async (method, p, body) => {
    const before = await state();
    const r = await call(method, p, body);
    expect(r.status).toBe(422);
    expect(r.json.errors[0].detail).toMatch(/VCS repositor|is not an OAuth token/);
    expect(await state()).toBe(before);
  });

  it('is 404 for organizations the caller may not manage or read, 401 without a token', async () => {
    expect((await call('POST', 'organizations/acme/registry-modules/vcs', vcsBody, outsider.token)).status).toBe(404);
    expect((await call('GET', 'organizations/acme/registry-modules/private/acme/vpc/aws/commits', undefined, outsider.token)).status).toBe(404);
    expect((await call('POST', 'registry-modules', vcsBody, null)).status).toBe(401);
  });
});

describe('deletes at registry-modules/actions/delete/… (Delete, deprecatedDeleteProvider, deprecatedDeleteVersion)', () => {
  beforeAll(async () => {
    await publish(t, 'acme', 'gone', 'aws', '1.0.0');
    await publish(t, 'acme', 'gone', 'aws', '1.1.0');
    await publish(t, 'acme', 'gone', 'gcp', '1.0.0');
    await publish(t, 'acme', 'gone', 'azurerm', '1.0.0');
  });

  it('refuses callers who may not manage modules with 404 and deletes nothing', async () => {
    const before = await state();
    for (const p of ['registry-modules/actions/delete/acme/gone', 'registry-modules/actions/delete/acme/gone/aws', 'registry-modules/actions/delete/acme/gone/aws/1.0.0']) {
      expect((await call('POST', p, undefined, outsider.token)).status, p).toBe(404);
      expect((await call('POST', p, undefined, member.token)).status, p).toBe(404);
      expect((await call('POST', p, undefined, null)).status, p).toBe(401);
    }
    expect(await state()).toBe(before);
  });

  it('deletes one version and its blob', async () => {
    const r = await call('POST', 'registry-modules/actions/delete/acme/gone/aws/1.1.0');
    expect(r.status).toBe(204);
    const versions = await t.api('GET', '/v1/modules/acme/gone/aws/versions');
    expect(versions.json.modules[0].versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
    expect((await call('POST', 'registry-modules/actions/delete/acme/gone/aws/1.1.0')).status).toBe(404);
  });

  it('deletes one provider with its versions', async () => {
    expect((await call('POST', 'registry-modules/actions/delete/acme/gone/gcp')).status).toBe(204);
    expect((await t.api('GET', '/v1/modules/acme/gone/gcp/versions')).status).toBe(404);
    expect((await t.api('GET', '/v1/modules/acme/gone/aws/versions')).status).toBe(200);
  });

  it('deletes every provider of the name, and nothing of another module', async () => {
    expect((await call('POST', 'registry-modules/actions/delete/acme/gone')).status).toBe(204);
    for (const provider of ['aws', 'azurerm']) expect((await t.api('GET', `/v1/modules/acme/gone/${provider}/versions`)).status).toBe(404);
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions')).status).toBe(200);
    expect((await call('POST', 'registry-modules/actions/delete/acme/gone')).status).toBe(404);
    const blobs = (fs.readdirSync(path.join(t.dataDir, 'blobs'), { recursive: true }) as string[]).filter((f) => f.endsWith('.tar.gz'));
    expect(blobs).toHaveLength(1);
  });
});

describe('deletes at organizations/:org/registry-modules/private/… (DeleteByName, DeleteProvider, DeleteVersion)', () => {
  it('deletes a version, a provider, then the name', async () => {
    await publish(t, 'acme', 'db', 'aws', '1.0.0');
    await publish(t, 'acme', 'db', 'aws', '1.1.0');
    await publish(t, 'acme', 'db', 'gcp', '1.0.0');
    expect((await call('DELETE', 'organizations/acme/registry-modules/private/acme/db/aws/1.1.0', undefined, member.token)).status).toBe(404);
    expect((await call('DELETE', 'organizations/acme/registry-modules/private/acme/db/aws/1.1.0')).status).toBe(204);
    expect((await call('DELETE', 'organizations/acme/registry-modules/private/acme/db/gcp')).status).toBe(204);
    expect((await t.api('GET', '/v1/modules/acme/db/aws/versions')).json.modules[0].versions).toHaveLength(1);
    expect((await call('DELETE', 'organizations/acme/registry-modules/private/acme/db')).status).toBe(204);
    expect((await t.api('GET', '/v1/modules/acme/db/aws/versions')).status).toBe(404);
  });
});
