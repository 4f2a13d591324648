import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ TERRACE_MAX_BODY_BYTES: '4096' });
});
afterAll(async () => {
  await t.close();
});

const userBody = (username: string, extra: Record<string, unknown> = {}) => ({
  data: { type: 'users', attributes: { username, email: `${username}@example.com`, ...extra } },
});

async function countRows(table: 'users' | 'tokens'): Promise<number> {
  const r = await t.running.deps.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('site admin creates users', () => {
  it('creates a user with HCP shapes', async () => {
    const res = await t.api('POST', '/api/v2/admin/users', { body: userBody('alice', { 'unknown-extra': 1 }) });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/vnd.api+json');
    const d = res.json.data;
    expect(d.type).toBe('users');
    expect(d.id).toMatch(/^user-[A-Za-z0-9]{16}$/);
    expect(d.attributes).toMatchObject({ username: 'alice', email: 'alice@example.com', 'is-site-admin': false, 'is-service-account': false });
    expect(d.attributes['created-at']).toMatch(RFC3339);
    expect(d.links.self).toBe(`/api/v2/users/${d.id}`);
  });

  it('accepts application/json as well as application/vnd.api+json', async () => {
    const res = await t.api('POST', '/api/v2/admin/users', {
      body: userBody('bob'),
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(201);
  });

  it('refuses duplicates case-insensitively, naming the attribute', async () => {
    const before = await countRows('users');
    const res = await t.api('POST', '/api/v2/admin/users', { body: userBody('ALICE') });
    expect(res.status).toBe(422);
    expect(res.json.errors[0]).toMatchObject({ status: '422', source: { pointer: '/data/attributes/username' } });
    expect(res.json.errors[0].detail).toContain('already taken');
    const dupEmail = await t.api('POST', '/api/v2/admin/users', {
      body: { data: { type: 'users', attributes: { username: 'alice2', email: 'ALICE@example.com' } } },
    });
    expect(dupEmail.status).toBe(422);
    expect(dupEmail.json.errors[0].source.pointer).toBe('/data/attributes/email');
    expect(await countRows('users')).toBe(before);
  });

  const bad: [string, unknown, number, string | undefined][] = [
    ['not an object', [], 422, ''],
    ['no data', { nope: 1 }, 422, '/data'],
    ['data is an array', { data: [] }, 422, '/data'],
    ['wrong type', { data: { type: 'teams', attributes: { username: 'x1', email: 'x1@e.com' } } }, 422, '/data/type'],
    ['missing username', { data: { type: 'users', attributes: { email: 'x2@e.com' } } }, 422, '/data/attributes/username'],
    ['missing email', { data: { type: 'users', attributes: { username: 'x3' } } }, 422, '/data/attributes/email'],
    ['username a number', { data: { type: 'users', attributes: { username: 7, email: 'x4@e.com' } } }, 422, '/data/attributes/username'],
    ['username with a slash', userBody('a/b'), 422, '/data/attributes/username'],
    ['username with spaces', userBody('a b'), 422, '/data/attributes/username'],
    ['bad email', { data: { type: 'users', attributes: { username: 'x5', email: 'nope' } } }, 422, '/data/attributes/email'],
    ['admin flag a string', userBody('x6', { 'is-site-admin': 'yes' }), 422, '/data/attributes/is-site-admin'],
    ['attributes a string', { data: { type: 'users', attributes: 'x' } }, 422, '/data/attributes'],
  ];
  it.each(bad)('rejects %s', async (_name, body, status, pointer) => {
    const before = await countRows('users');
    const res = await t.api('POST', '/api/v2/admin/users', { body });
    expect(res.status).toBe(status);
    expect(res.json.errors[0].status).toBe(String(status));
    expect(res.json.errors[0].detail.length).toBeGreaterThan(5);
    if (pointer !== undefined) expect(res.json.errors[0].source?.pointer).toBe(pointer);
    expect(await countRows('users')).toBe(before);
  });

  it('rejects malformed JSON with 400', async () => {
    const before = await countRows('users');
    const res = await t.api('POST', '/api/v2/admin/users', { rawBody: '{"data": {' });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].detail).toContain('not valid JSON');
    expect(await countRows('users')).toBe(before);
  });

  it('rejects an empty body with 422', async () => {
    const res = await t.api('POST', '/api/v2/admin/users', { rawBody: '' , headers: { 'Content-Type': 'application/vnd.api+json' } });
    expect(res.status).toBe(422);
  });

  it('rejects a non-JSON content type with 415', async () => {
    const res = await t.api('POST', '/api/v2/admin/users', {
      rawBody: 'username=eve',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.json.errors[0].detail).toContain('application/vnd.api+json');
  });

  it('rejects an oversized body with 413 and creates nothing', async () => {
    const before = await countRows('users');
    const res = await t.api('POST', '/api/v2/admin/users', { body: userBody('big', { pad: 'x'.repeat(10_000) }) });
    expect(res.status).toBe(413);
    expect(res.json.errors[0].status).toBe('413');
    expect(await countRows('users')).toBe(before);
  });

  it('is 401 without a token and 404 for a non-admin', async () => {
    const carol = await createUserWithToken(t, 'carol');
    const before = await countRows('users');
    const anon = await t.api('POST', '/api/v2/admin/users', { token: null, body: userBody('mallory') });
    expect(anon.status).toBe(401);
    expect(anon.json.errors[0]).toMatchObject({ status: '401', title: 'unauthorized' });
    const res = await t.api('POST', '/api/v2/admin/users', { token: carol.token, body: userBody('mallory') });
    expect(res.status).toBe(404);
    expect(await countRows('users')).toBe(before);
  });
});

describe('bad tokens', () => {
  it.each([
    ['an unknown token', 'Bearer abc.terrace.def'],
    ['a malformed header', 'Basic dXNlcjpwYXNz'],
    ['a bearer with no token', 'Bearer'],
    ['a bearer with two words', 'Bearer a b'],
  ])('%s is 401 with a JSON:API error', async (_n, header) => {
    const res = await t.api('GET', '/api/v2/account/details', { token: null, headers: { Authorization: header } });
    expect(res.status).toBe(401);
    expect(res.json.errors[0].status).toBe('401');
  });

  it('accepts the scheme in any case', async () => {
    const res = await t.api('GET', '/api/v2/account/details', { token: null, headers: { Authorization: `bearer ${t.adminToken}` } });
    expect(res.status).toBe(200);
  });
});

describe('tokens and account details', () => {
  it('a new user token authenticates account details, and is shown only once', async () => {
    const dave = await createUserWithToken(t, 'dave');
    expect(dave.token).toMatch(/\.terrace\./);
    const me = await t.api('GET', '/api/v2/account/details', { token: dave.token });
    expect(me.status).toBe(200);
    expect(me.json.data).toMatchObject({ id: dave.id, type: 'users', attributes: { username: 'dave', email: 'dave@example.com' } });

    const list = await t.api('GET', `/api/v2/users/${dave.id}/authentication-tokens`, { token: dave.token });
    expect(list.status).toBe(200);
    expect(list.json.data).toHaveLength(1);
    expect(list.json.data[0].type).toBe('authentication-tokens');
    expect(list.json.data[0].attributes.token).toBeNull();
    expect(list.json.data[0].attributes['last-used-at']).toMatch(RFC3339);
    expect(list.json.meta.pagination).toMatchObject({ 'current-page': 1, 'total-count': 1, 'total-pages': 1 });

    // Only the hash is stored.
    const rows = await t.running.deps.db.selectFrom('tokens').select('token_hash').execute();
    expect(rows.some((r) => r.token_hash.includes(dave.token))).toBe(false);
    expect(JSON.stringify(rows)).not.toContain(dave.token.split('.')[2]);
  });

  it('lets a user list tokens by username too, with paging in raw or encoded brackets', async () => {
    const erin = await createUserWithToken(t, 'erin');
    for (let i = 0; i < 2; i++) {
      const r = await t.api('POST', `/api/v2/users/erin/authentication-tokens`, {
        token: erin.token,
        body: { data: { type: 'authentication-tokens', attributes: { description: `ci ${i}` } } },
      });
      expect(r.status).toBe(201);
    }
    const raw = await t.api('GET', `/api/v2/users/${erin.id}/authentication-tokens?page[number]=2&page[size]=2`, { token: erin.token });
    const enc = await t.api('GET', `/api/v2/users/${erin.id}/authentication-tokens?page%5Bnumber%5D=2&page%5Bsize%5D=2`, { token: erin.token });
    for (const r of [raw, enc]) {
      expect(r.status).toBe(200);
      expect(r.json.data).toHaveLength(1);
      expect(r.json.meta.pagination).toEqual({
        'current-page': 2, 'page-size': 2, 'prev-page': 1, 'next-page': null, 'total-pages': 2, 'total-count': 3,
      });
      expect(r.json.links.next).toBeNull();
      expect(r.json.links.prev).toContain('page%5Bnumber%5D=1');
    }
    const badPage = await t.api('GET', `/api/v2/users/${erin.id}/authentication-tokens?page[size]=zero`, { token: erin.token });
    expect(badPage.status).toBe(400);
    expect(badPage.json.errors[0].source).toEqual({ parameter: 'page[size]' });
  });

  it("hides other users' tokens behind 404", async () => {
    const frank = await createUserWithToken(t, 'frank');
    const gina = await createUserWithToken(t, 'gina');
    const before = await countRows('tokens');
    expect((await t.api('GET', `/api/v2/users/${gina.id}/authentication-tokens`, { token: frank.token })).status).toBe(404);
    const steal = await t.api('POST', `/api/v2/users/${gina.id}/authentication-tokens`, {
      token: frank.token,
      body: { data: { type: 'authentication-tokens', attributes: {} } },
    });
    expect(steal.status).toBe(404);
    expect(await countRows('tokens')).toBe(before);
    const ginaTokens = await t.api('GET', `/api/v2/users/${gina.id}/authentication-tokens`, { token: gina.token });
    const id = ginaTokens.json.data[0].id;
    expect((await t.api('DELETE', `/api/v2/authentication-tokens/${id}`, { token: frank.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/authentication-tokens/${id}`, { token: frank.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/account/details', { token: gina.token })).status).toBe(200);
    // The site admin may manage anyone's.
    expect((await t.api('GET', `/api/v2/authentication-tokens/${id}`)).status).toBe(200);
  });

  it('deleting a token stops it authenticating', async () => {
    const hank = await createUserWithToken(t, 'hank');
    const list = await t.api('GET', `/api/v2/users/${hank.id}/authentication-tokens`, { token: hank.token });
    const del = await t.api('DELETE', `/api/v2/authentication-tokens/${list.json.data[0].id}`, { token: hank.token });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await t.api('GET', '/api/v2/account/details', { token: hank.token })).status).toBe(401);
    expect((await t.api('DELETE', `/api/v2/authentication-tokens/${list.json.data[0].id}`)).status).toBe(404);
  });

  it('honours expired-at, and refuses one in the past or malformed', async () => {
    const ivy = await createUserWithToken(t, 'ivy');
    const clock = t.clock as ManualClock;
    const soon = new Date(clock.now().getTime() + 60_000).toISOString();
    const r = await t.api('POST', `/api/v2/users/${ivy.id}/authentication-tokens`, {
      token: ivy.token,
      body: { data: { type: 'authentication-tokens', attributes: { 'expired-at': soon } } },
    });
    expect(r.status).toBe(201);
    expect(r.json.data.attributes['expired-at']).toBe(soon);
    const shortLived = r.json.data.attributes.token;
    expect((await t.api('GET', '/api/v2/account/details', { token: shortLived })).status).toBe(200);
    clock.advance(61_000);
    expect((await t.api('GET', '/api/v2/account/details', { token: shortLived })).status).toBe(401);

    const before = await countRows('tokens');
    for (const expiredAt of [new Date(clock.now().getTime() - 1000).toISOString(), 'tomorrow', 12]) {
      const bad = await t.api('POST', `/api/v2/users/${ivy.id}/authentication-tokens`, {
        token: ivy.token,
        body: { data: { type: 'authentication-tokens', attributes: { 'expired-at': expiredAt } } },
      });
      expect(bad.status).toBe(422);
      expect(bad.json.errors[0].source.pointer).toBe('/data/attributes/expired-at');
    }
    expect(await countRows('tokens')).toBe(before);
  });
});
