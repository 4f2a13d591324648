import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg } from '../helpers/organizations.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

let t: TestServer;
let wsId: string;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  await createOrg(t, 'acme');
  wsId = (await createWorkspace(t, 'acme', 'web')).id;
});

afterAll(async () => {
  await t?.close();
});

const HUGE = ['99999999999999999999', '1'.repeat(400), '2147483648', '9223372036854775808'];

describe('numeric query parameters', () => {
  const lists = () => [
    '/api/v2/organizations',
    '/api/v2/organizations/acme/workspaces',
    '/api/v2/organizations/acme/teams',
    '/api/v2/organizations/acme/registry-modules',
    '/api/v2/organizations/acme/organization-memberships',
    '/api/v2/organizations/acme/agent-pools',
    '/api/v2/state-versions?filter[organization][name]=acme&filter[workspace][name]=web',
    `/api/v2/workspaces/${wsId}/current-state-version-outputs`,
  ];

  it.each(HUGE)('refuses page[number]=%s on every JSON:API list with a 400 naming the parameter and its range', async (n) => {
    for (const path of lists()) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await t.api('GET', `${path}${sep}page%5Bnumber%5D=${n}&page%5Bsize%5D=5`);
      expect(r.status, path).toBe(400);
      expect(r.json.errors[0]).toMatchObject({ status: '400', source: { parameter: 'page[number]' } });
      expect(r.json.errors[0].detail).toContain('page[number] must be a whole number from 1 to 2147483647');
      expect(r.json.errors[0].detail.length).toBeLessThan(250);
    }
  });

  it('serves the largest page number as an empty page', async () => {
    const r = await t.api('GET', '/api/v2/organizations/acme/workspaces?page[number]=2147483647&page[size]=100');
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual([]);
    expect(r.json.meta.pagination['current-page']).toBe(2147483647);
  });

  it('clamps page[size] of any length to the maximum', async () => {
    const r = await t.api('GET', `/api/v2/organizations/acme/workspaces?page[size]=${'9'.repeat(400)}`);
    expect(r.status).toBe(200);
    expect(r.json.meta.pagination['page-size']).toBe(100);
  });

  it.each(['-1', '+1', '0x10', ' 1', '1e3', '1.5'])('refuses page[number]=%j', async (n) => {
    const r = await t.api('GET', `/api/v2/organizations/acme/workspaces?page[number]=${encodeURIComponent(n)}`);
    expect(r.status).toBe(400);
    expect(r.json.errors[0].source).toEqual({ parameter: 'page[number]' });
  });

  it.each(HUGE)('refuses offset=%s on /v1/modules and search in the registry format', async (n) => {
    for (const path of ['/v1/modules', '/v1/modules/acme', '/v1/modules/search?q=x']) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await t.api('GET', `${path}${sep}offset=${n}`);
      expect(r.status, path).toBe(400);
      expect(r.json).toEqual({ errors: [expect.stringContaining('offset must be a whole number from 0 to 2147483647')] });
    }
  });

  it('clamps a registry limit of any size to the maximum and reports it', async () => {
    for (const path of ['/v1/modules', '/v1/modules/search?q=x']) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await t.api('GET', `${path}${sep}limit=${'9'.repeat(400)}&offset=2147483647`);
      expect(r.status, path).toBe(200);
      expect(r.json.meta).toMatchObject({ limit: 100, current_offset: 2147483647 });
      expect(r.json.modules).toEqual([]);
    }
  });
});

describe('echoed input', () => {
  const long = 'x'.repeat(500_000);

  it('quotes at most 100 characters of an invalid module name', async () => {
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules', {
      body: { data: { type: 'registry-modules', attributes: { name: long, provider: 'aws' } } },
    });
    expect(r.status).toBe(422);
    const detail: string = r.json.errors[0].detail;
    expect(detail).toBe(`name "${'x'.repeat(99)}…" is invalid: use 1-64 letters, digits, "-" or "_", starting and ending with a letter or digit`);
    expect(r.text.length).toBeLessThan(1000);
    expect((await t.api('GET', '/api/v2/organizations/acme/registry-modules')).json.data).toEqual([]);
  });

  it('quotes at most 100 characters of an unknown id in a path, and of a wrong data.type', async () => {
    const id = 'ws-' + 'y'.repeat(10_000);
    const r = await t.api('GET', `/api/v2/workspaces/${id}`);
    expect(r.status).toBe(404);
    expect(r.json.errors[0].detail).toBe(`workspace "ws-${'y'.repeat(96)}…" not found, or you are not authorized to see it`);
    const w = await t.api('POST', '/api/v2/organizations/acme/workspaces', { body: { data: { type: long, attributes: { name: 'n' } } } });
    expect(w.status).toBe(422);
    expect(w.json.errors[0].detail).toBe(`data.type must be "workspaces", got "${'x'.repeat(99)}…"`);
  });

  it('caps a path echoed by the not-found answer', async () => {
    const r = await t.api('GET', `/api/v2/${'z'.repeat(8000)}`);
    expect(r.status).toBe(404);
    expect(r.json.errors[0].detail).toBe(`no endpoint at GET /api/v2/${'z'.repeat(91)}…`);
  });

  it('caps every error body the renderers emit, whatever a message interpolated (zod pointers included)', async () => {
    const key = 'k'.repeat(100_000);
    // An object of a million-character key and many bad members: still a short answer.
    const r = await t.api('POST', '/api/v2/organizations', {
      body: { data: { type: 'organizations', attributes: { name: 7, email: 8, [key]: 1 } } },
    });
    expect(r.status).toBe(422);
    expect(r.text.length).toBeLessThan(5000);
  });
});

describe('a NUL character (%00) in the address', () => {
  // PostgreSQL cannot compare a string holding NUL: without the check these were 500s there.
  it('names nothing: 404 in the surface’s own format, for a path and for a query, on either store', async () => {
    for (const p of ['/api/v2/organizations/acme%00', `/api/v2/workspaces/${wsId}%00x`, '/api/v2/organizations/acme/workspaces?search%5Bname%5D=we%00b']) {
      const r = await t.api('GET', p);
      expect(r.status, p).toBe(404);
      expect(r.json.errors[0]).toMatchObject({ status: '404', title: 'not found' });
    }
    const registry = await t.api('GET', '/v1/modules/acme%00/net/aws/versions');
    expect(registry.status).toBe(404);
    expect(registry.json.errors).toEqual([expect.any(String)]);
    // The same names without the NUL are there.
    expect((await t.api('GET', '/api/v2/organizations/acme')).status).toBe(200);
    expect((await t.api('GET', '/api/v2/organizations/acme/workspaces?search%5Bname%5D=web')).status).toBe(200);
  });

  it('in a JSON body is refused with a 422 naming the member, and nothing is stored', async () => {
    const body = (description: string) => ({ data: { type: 'workspaces', attributes: { description } } });
    const r = await t.api('PATCH', `/api/v2/workspaces/${wsId}`, { body: body('before\u0000after') });
    expect(r.status).toBe(422);
    expect(r.json.errors[0]).toMatchObject({ status: '422', source: { pointer: '/data/attributes/description' } });
    expect(r.json.errors[0].detail).toContain('NUL character');
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}`)).json.data.attributes.description).not.toContain('before');
    // An escaped backslash followed by "u0000" is six ordinary characters.
    const ok = await t.api('PATCH', `/api/v2/workspaces/${wsId}`, { body: body('a \\u0000 b') });
    expect(ok.status).toBe(200);
    expect(ok.json.data.attributes.description).toBe('a \\u0000 b');
  });
});
