import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accept, createOrg, createTeam, invite, RFC3339 } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { bindingBody, tagRefs, tagSnapshot } from '../helpers/tags.js';

let t: TestServer;
let owner: { token: string };
let reader: { token: string };
let stranger: { token: string };
const ws: Record<string, string> = {};

const api = (method: string, path: string, token: string, body?: unknown) => t.api(method, path, { token, body });
async function create(name: string, attributes: Record<string, unknown> = {}, relationships: Record<string, unknown> = {}) {
  const r = await api('POST', '/api/v2/organizations/acme/workspaces', owner.token, { data: { type: 'workspaces', attributes: { name, ...attributes }, relationships } });
  expect(r.status, r.text).toBe(201);
  ws[name] = r.json.data.id;
  return r.json.data;
}
const names = (r: { json: { data: { attributes: { name: string } }[] } }) => r.json.data.map((d) => d.attributes.name);
const list = (query: string, token = owner.token) => api('GET', `/api/v2/organizations/acme/workspaces?${query}`, token);

beforeAll(async () => {
  t = await startTestServer();
  owner = await createUserWithToken(t, 'tag-owner');
  reader = await createUserWithToken(t, 'tag-reader');
  stranger = await createUserWithToken(t, 'tag-stranger');
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'other', { token: stranger.token });
  const readers = await createTeam(t, owner.token, 'acme', 'readers', { 'organization-access': { 'read-state-outputs': true } });
  await accept(t, reader.token, await invite(t, owner.token, 'acme', 'tag-reader', [readers.id]));
});
afterAll(async () => t?.close());

describe('single-string tags on workspaces', () => {
  it('takes tag-names and relationships.tags (by name, as go-tfe sends them) on create and reads them back sorted', async () => {
    const a = await create('web-a', { 'tag-names': ['web', 'prod'] });
    expect(a.attributes['tag-names']).toEqual(['prod', 'web']);
    const b = await create('web-b', {}, { tags: { data: [{ type: 'tags', id: '', attributes: { name: 'web' } }] } });
    expect(b.attributes['tag-names']).toEqual(['web']);
    await create('api-a', { 'tag-names': ['api', 'env:prod'] });
    await create('bare');
    const r = await api('GET', `/api/v2/workspaces/${ws['web-a']}`, reader.token);
    expect(r.json.data.attributes['tag-names']).toEqual(['prod', 'web']);
  });

  it('search[tags] keeps workspaces carrying every tag given; search[exclude-tags] drops those carrying any', async () => {
    expect(names(await list('search%5Btags%5D=web'))).toEqual(['web-a', 'web-b']);
    expect(names(await list('search%5Btags%5D=web,prod'))).toEqual(['web-a']);
    expect(names(await list('search%5Btags%5D=web&search%5Bexclude-tags%5D=prod'))).toEqual(['web-b']);
    expect(names(await list('search%5Bexclude-tags%5D=web,api'))).toEqual(['bare']);
    expect(names(await list('search%5Btags%5D=nothing'))).toEqual([]);
    expect((await list('search%5Btags%5D=web')).json.meta.pagination['total-count']).toBe(2);
    // Tags match exactly: neither a prefix nor another case.
    expect(names(await list('search%5Btags%5D=we'))).toEqual([]);
    expect(names(await list('search%5Btags%5D=WEB'))).toEqual([]);
  });

  it('lists, adds and removes a workspace\'s tags through relationships/tags', async () => {
    const path = `/api/v2/workspaces/${ws['web-b']}/relationships/tags`;
    expect((await api('POST', path, owner.token, tagRefs('blue', 'web'))).status).toBe(204);
    const listed = await api('GET', path, reader.token);
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((d: any) => d.attributes.name)).toEqual(['blue', 'web']);
    for (const d of listed.json.data) expect(d).toEqual({ id: expect.stringMatching(/^tag-[A-Za-z0-9]{16}$/), type: 'tags', attributes: { name: d.attributes.name } });
    // By id, as go-tfe's RemoveTags sends them; a name the workspace does not carry is ignored.
    const blue = listed.json.data.find((d: any) => d.attributes.name === 'blue');
    const del = await api('DELETE', path, owner.token, { data: [{ type: 'tags', id: blue.id }, { type: 'tags', attributes: { name: 'never-added' } }] });
    expect(del.status).toBe(204);
    expect((await api('GET', path, owner.token)).json.data.map((d: any) => d.attributes.name)).toEqual(['web']);
  });

  it('tag-names on update replaces the list', async () => {
    const r = await api('PATCH', `/api/v2/workspaces/${ws['api-a']}`, owner.token, { data: { type: 'workspaces', attributes: { 'tag-names': ['api', 'blue'] } } });
    expect(r.status).toBe(200);
    expect(r.json.data.attributes['tag-names']).toEqual(['api', 'blue']);
    const untouched = await api('PATCH', `/api/v2/workspaces/${ws['api-a']}`, owner.token, { data: { type: 'workspaces', attributes: { description: 'x' } } });
    expect(untouched.json.data.attributes['tag-names']).toEqual(['api', 'blue']);
  });

  it('lists the organization\'s tags with their instance counts, searchable and excluding a workspace\'s', async () => {
    const r = await api('GET', '/api/v2/organizations/acme/tags', reader.token);
    expect(r.status).toBe(200);
    const byName = Object.fromEntries(r.json.data.map((d: any) => [d.attributes.name, d]));
    expect(Object.keys(byName)).toEqual(['api', 'blue', 'env:prod', 'prod', 'web']);
    expect(byName.web.attributes['instance-count']).toBe(2);
    expect(byName['env:prod'].attributes['instance-count']).toBe(0);
    expect(byName.web.id).toMatch(/^tag-[A-Za-z0-9]{16}$/);
    expect(byName.web.type).toBe('tags');
    expect(byName.web.attributes['created-at']).toMatch(RFC3339);
    expect(byName.web.relationships.organization.data).toEqual({ id: 'acme', type: 'organizations' });
    expect(r.json.meta.pagination['total-count']).toBe(5);
    const q = await api('GET', '/api/v2/organizations/acme/tags?search%5Bq%5D=PRO', owner.token);
    expect(q.json.data.map((d: any) => d.attributes.name)).toEqual(['env:prod', 'prod']);
    const ex = await api('GET', `/api/v2/organizations/acme/tags?filter%5Bexclude%5D%5Btaggable%5D%5Bid%5D=${ws['web-a']}`, owner.token);
    expect(ex.json.data.map((d: any) => d.attributes.name)).toEqual(['api', 'blue', 'env:prod']);
  });

  it('adds a tag to workspaces through POST /tags/:id/relationships/workspaces', async () => {
    const tags = (await api('GET', '/api/v2/organizations/acme/tags?search%5Bq%5D=env', owner.token)).json.data;
    const r = await api('POST', `/api/v2/tags/${tags[0].id}/relationships/workspaces`, owner.token, { data: [{ type: 'workspaces', id: ws.bare }] });
    expect(r.status).toBe(204);
    // api-a lost env:prod when its tag-names were replaced above.
    expect(names(await list('search%5Btags%5D=env:prod'))).toEqual(['bare']);
  });

  it('refuses bad tags with 422 naming what to change, and changes nothing', async () => {
    const before = await tagSnapshot(t);
    const bad: [string, string, unknown, string][] = [
      ['POST', '/api/v2/organizations/acme/workspaces', { data: { type: 'workspaces', attributes: { name: 'bad-1', 'tag-names': ['has space'] } } }, 'tag-names[0] "has space" must be 1-255 letters, digits, ":", "-" or "_"'],
      ['POST', '/api/v2/organizations/acme/workspaces', { data: { type: 'workspaces', attributes: { name: 'bad-2', 'tag-names': ['x'.repeat(256)] } } }, 'tag-names.0: must be at most 255 characters'],
      ['POST', '/api/v2/organizations/acme/workspaces', { data: { type: 'workspaces', attributes: { name: 'bad-3', 'tag-names': 'web' } } }, 'tag-names: must be an array of strings'],
      ['POST', '/api/v2/organizations/acme/workspaces', { data: { type: 'workspaces', attributes: { name: 'bad-4' }, relationships: { tags: { data: [{ type: 'tags', id: 'tag-doesnotexist0000' }] } } } }, 'relationships.tags: "tag-doesnotexist0000" is not a tag of organization "acme"'],
      ['POST', '/api/v2/organizations/acme/workspaces', { data: { type: 'workspaces', attributes: { name: 'bad-5' }, relationships: { tags: { data: [{ type: 'tags' }] } } } }, 'data[0] needs an id ("tag-…") or attributes.name'],
      ['POST', '/api/v2/organizations/acme/workspaces', { data: { type: 'workspaces', attributes: { name: 'bad-6' }, relationships: { tags: [] } } }, 'relationships.tags must be an object with a "data" member'],
      ['POST', `/api/v2/workspaces/${ws.bare}/relationships/tags`, { data: [] }, 'data must list at least one item'],
      ['POST', `/api/v2/workspaces/${ws.bare}/relationships/tags`, { data: [{ type: 'teams', id: 'x' }] }, 'data[0].type must be "tags", got "teams"'],
      ['POST', `/api/v2/workspaces/${ws.bare}/relationships/tags`, { data: 'web' }, 'data must be an array'],
      ['POST', `/api/v2/workspaces/${ws.bare}/relationships/tags`, { data: [{ type: 'tags', attributes: { name: 'bad/slash' } }] }, 'data[0].attributes.name "bad/slash" must be 1-255 letters, digits, ":", "-" or "_"'],
      ['POST', `/api/v2/workspaces/${ws.bare}/relationships/tags`, { data: Array.from({ length: 101 }, (_, i) => ({ type: 'tags', attributes: { name: `t${i}` } })) }, 'data may list at most 100 items'],
    ];
    for (const [method, path, body, detail] of bad) {
      const r = await api(method, path, owner.token, body);
      expect(r.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(422);
      expect(r.json.errors[0].detail).toBe(detail);
    }
    expect(await tagSnapshot(t)).toEqual(before);
  });

  it('answers 404 to callers who may not see or change the workspace, changing nothing', async () => {
    const before = await tagSnapshot(t);
    const path = `/api/v2/workspaces/${ws.bare}/relationships/tags`;
    expect((await api('GET', path, stranger.token)).status).toBe(404);
    // The reader sees the workspace but may not change it; the body is not even read.
    expect((await api('POST', path, reader.token, { data: 'not even valid' })).status).toBe(404);
    expect((await api('DELETE', path, reader.token, tagRefs('web'))).status).toBe(404);
    expect((await api('GET', '/api/v2/organizations/acme/tags', stranger.token)).status).toBe(404);
    const tags = (await api('GET', '/api/v2/organizations/acme/tags', owner.token)).json.data;
    expect((await api('POST', `/api/v2/tags/${tags[0].id}/relationships/workspaces`, reader.token, { data: [{ type: 'workspaces', id: ws.bare }] })).status).toBe(404);
    expect((await api('POST', `/api/v2/tags/${tags[0].id}/relationships/workspaces`, stranger.token, { data: [{ type: 'workspaces', id: ws.bare }] })).status).toBe(404);
    expect((await api('POST', '/api/v2/tags/tag-unknown/relationships/workspaces', owner.token, { data: [{ type: 'workspaces', id: ws.bare }] })).status).toBe(404);
    expect((await api('GET', path, '')).status).toBe(401);
    // Another tenant's workspace cannot be tagged with this organization's tag.
    const theirs = await api('POST', '/api/v2/organizations/other/workspaces', stranger.token, { data: { type: 'workspaces', attributes: { name: 'theirs' } } });
    const cross = await api('POST', `/api/v2/tags/${tags[0].id}/relationships/workspaces`, owner.token, { data: [{ type: 'workspaces', id: theirs.json.data.id }] });
    expect(cross.status).toBe(422);
    expect(cross.json.errors[0].detail).toBe(`data: "${theirs.json.data.id}" is not a workspace of organization "acme"`);
    const after = await tagSnapshot(t);
    expect(after.tags).toEqual(before.tags);
    expect(after.workspace_tags).toEqual(before.workspace_tags);
  });
});

describe('deleting organization tags', () => {
  it('removes tags from the organization and every workspace; ids it does not have are ignored', async () => {
    await create('doomed', { 'tag-names': ['blue', 'doomed-tag'] });
    const tags = (await api('GET', '/api/v2/organizations/acme/tags?search%5Bq%5D=doomed', owner.token)).json.data;
    expect(tags.map((d: any) => d.attributes.name)).toEqual(['doomed-tag']);
    // The reader may not (404, before the body is read); neither may another tenant.
    expect((await api('DELETE', '/api/v2/organizations/acme/tags', reader.token, { data: 'junk' })).status).toBe(404);
    expect((await api('DELETE', '/api/v2/organizations/acme/tags', stranger.token, { data: [{ type: 'tags', id: tags[0].id }] })).status).toBe(404);
    const bad = await api('DELETE', '/api/v2/organizations/acme/tags', owner.token, { data: [{ type: 'workspaces', id: tags[0].id }] });
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0].detail).toBe('data[0].type must be "tags", got "workspaces"');
    expect((await api('GET', `/api/v2/workspaces/${ws.doomed}`, owner.token)).json.data.attributes['tag-names']).toEqual(['blue', 'doomed-tag']);
    const r = await api('DELETE', '/api/v2/organizations/acme/tags', owner.token, { data: [{ type: 'tags', id: tags[0].id }, { type: 'tags', id: 'tag-nosuchtag000000' }] });
    expect(r.status).toBe(204);
    expect((await api('GET', `/api/v2/workspaces/${ws.doomed}`, owner.token)).json.data.attributes['tag-names']).toEqual(['blue']);
    expect((await api('GET', '/api/v2/organizations/acme/tags?search%5Bq%5D=doomed', owner.token)).json.data).toEqual([]);
  });
});

describe('key/value tags (tag bindings)', () => {
  it('takes relationships.tag-bindings on create and lists them', async () => {
    const w = await create('kv-prod', {}, { 'tag-bindings': bindingBody({ env: 'prod', team: 'core' }) });
    expect(w.relationships['tag-bindings'].links.related).toBe(`/api/v2/workspaces/${w.id}/tag-bindings`);
    expect(w.relationships['effective-tag-bindings'].links.related).toBe(`/api/v2/workspaces/${w.id}/effective-tag-bindings`);
    await create('kv-dev', {}, { 'tag-bindings': bindingBody({ env: 'dev', team: 'core' }) });
    const r = await api('GET', `/api/v2/workspaces/${w.id}/tag-bindings`, reader.token);
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(2);
    const [env, team] = r.json.data;
    expect(env).toEqual({ id: expect.stringMatching(/^tb-[A-Za-z0-9]{16}$/), type: 'tag-bindings', attributes: { key: 'env', value: 'prod', 'created-at': expect.stringMatching(RFC3339) } });
    expect(team.attributes).toMatchObject({ key: 'team', value: 'core' });
  });

  it('filters the list by filter[tagged] pairs (all must hold); the keys also match search[tags]', async () => {
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=prod'))).toEqual(['kv-prod']);
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=team&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=core'))).toEqual(['kv-dev', 'kv-prod']);
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=team&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=core&filter%5Btagged%5D%5B1%5D%5Bkey%5D=env&filter%5Btagged%5D%5B1%5D%5Bvalue%5D=dev'))).toEqual(['kv-dev']);
    // No value: any value of the key.
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=env'))).toEqual(['kv-dev', 'kv-prod']);
    // Terraform sends the keys as search[tags] beside the pairs.
    expect(names(await list('search%5Btags%5D=env,team&filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=prod'))).toEqual(['kv-prod']);
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=staging'))).toEqual([]);
  });

  it('lists single-string tags among the bindings as keys with empty values; a binding of the key wins', async () => {
    const path = `/api/v2/workspaces/${ws['web-a']}/tag-bindings`;
    const tags = Object.fromEntries((await api('GET', `/api/v2/workspaces/${ws['web-a']}/relationships/tags`, owner.token)).json.data.map((d: any) => [d.attributes.name, d.id]));
    const before = await api('GET', path, reader.token);
    expect(before.json.data.map((d: any) => [d.id, d.attributes.key, d.attributes.value])).toEqual([[tags.prod, 'prod', ''], [tags.web, 'web', '']]);
    expect((await api('PATCH', path, owner.token, bindingBody({ prod: 'eu' }))).status).toBe(200);
    const after = await api('GET', path, owner.token);
    expect(after.json.data.map((d: any) => [d.attributes.key, d.attributes.value])).toEqual([['prod', 'eu'], ['web', '']]);
    // DELETE removes bindings; the single-string tags stay (relationships/tags removes those).
    expect((await api('DELETE', path, owner.token)).status).toBe(204);
    expect((await api('GET', path, owner.token)).json.data.map((d: any) => [d.attributes.key, d.attributes.value])).toEqual([['prod', ''], ['web', '']]);
    expect((await api('GET', `/api/v2/workspaces/${ws['web-a']}/effective-tag-bindings`, owner.token)).json.data.map((d: any) => d.attributes.key)).toEqual(['prod', 'web']);
    // A key without a value in filter[tagged] matches the single-string tag.
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=prod&filter%5Btagged%5D%5B0%5D%5Bvalue%5D='))).toEqual(['web-a']);
  });

  it('PATCH …/tag-bindings adds keys and replaces values; DELETE removes them all', async () => {
    const path = `/api/v2/workspaces/${ws['kv-dev']}/tag-bindings`;
    // go-tfe omits an empty value.
    const r = await api('PATCH', path, owner.token, { data: [{ type: 'tag-bindings', attributes: { key: 'env', value: 'staging' } }, { type: 'tag-bindings', attributes: { key: 'web' } }] });
    expect(r.status).toBe(200);
    expect(r.json.data.map((d: any) => [d.attributes.key, d.attributes.value])).toEqual([['env', 'staging'], ['team', 'core'], ['web', '']]);
    expect(names(await list('search%5Btags%5D=web'))).toEqual(['kv-dev', 'web-a', 'web-b']);
    expect((await api('DELETE', path, owner.token)).status).toBe(204);
    expect((await api('GET', path, owner.token)).json.data).toEqual([]);
  });

  it('tag-bindings on update replace the workspace\'s bindings', async () => {
    const r = await api('PATCH', `/api/v2/workspaces/${ws['kv-dev']}`, owner.token, { data: { type: 'workspaces', relationships: { 'tag-bindings': bindingBody({ env: 'dev' }) } } });
    expect(r.status).toBe(200);
    const b = await api('GET', `/api/v2/workspaces/${ws['kv-dev']}/tag-bindings`, owner.token);
    expect(b.json.data.map((d: any) => [d.attributes.key, d.attributes.value])).toEqual([['env', 'dev']]);
  });

  it('effective bindings add the project\'s to the workspace\'s own, which win on the same key', async () => {
    const project = await api('POST', '/api/v2/organizations/acme/projects', owner.token, {
      data: { type: 'projects', attributes: { name: 'payments' }, relationships: { 'tag-bindings': bindingBody({ env: 'prod', 'cost-center': 'cc-1' }) } },
    });
    expect(project.status).toBe(201);
    const w = await create('pay-1', {}, { project: { data: { type: 'projects', id: project.json.data.id, attributes: { name: 'payments' } } }, 'tag-bindings': bindingBody({ env: 'qa' }) });
    const eff = await api('GET', `/api/v2/workspaces/${w.id}/effective-tag-bindings`, reader.token);
    expect(eff.status).toBe(200);
    expect(eff.json.data.map((d: any) => [d.type, d.attributes.key, d.attributes.value, d.links?.['inherited-from'] ?? null])).toEqual([
      ['effective-tag-bindings', 'cost-center', 'cc-1', `/api/v2/projects/${project.json.data.id}`],
      ['effective-tag-bindings', 'env', 'qa', null],
    ]);
    // The list filters on what is in force: the inherited cost-center, and env=qa rather than the project's env=prod.
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=cost-center&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=cc-1'))).toEqual(['pay-1']);
    expect(names(await list('filter%5Btagged%5D%5B0%5D%5Bkey%5D=env&filter%5Btagged%5D%5B0%5D%5Bvalue%5D=prod'))).toEqual(['kv-prod']);
    expect(names(await list('search%5Btags%5D=cost-center'))).toEqual(['pay-1']);
  });

  it('refuses bad bindings and filters with the exact error, changing nothing', async () => {
    const before = await tagSnapshot(t);
    const path = `/api/v2/workspaces/${ws['kv-prod']}/tag-bindings`;
    const bad: [unknown, string][] = [
      [{ data: [] }, 'data must list at least one item'],
      [{ data: {} }, 'data must be an array'],
      [{ data: [{ type: 'tags', attributes: { key: 'a' } }] }, 'data[0].type must be "tag-bindings", got "tags"'],
      [{ data: [{ type: 'tag-bindings', attributes: {} }] }, 'data[0].attributes.key is required and must be 1-255 letters, digits, ":", "-" or "_"'],
      [{ data: [{ type: 'tag-bindings', attributes: { key: 'a b', value: 'x' } }] }, 'data[0].attributes.key "a b" must be 1-255 letters, digits, ":", "-" or "_"'],
      [{ data: [{ type: 'tag-bindings', attributes: { key: 'a', value: 42 } }] }, 'data[0].attributes.value 42 must be at most 255 letters, digits, spaces or ":_./@=+-" (it may be empty)'],
      [{ data: [{ type: 'tag-bindings', attributes: { key: 'a', value: 'x' } }, { type: 'tag-bindings', attributes: { key: 'a', value: 'y' } }] }, 'data[1].attributes.key "a" is given twice; a key has one value'],
    ];
    for (const [body, detail] of bad) {
      const r = await api('PATCH', path, owner.token, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.json.errors[0].detail).toBe(detail);
    }
    const badList = await list('filter%5Btagged%5D%5Bx%5D%5Bkey%5D=env');
    expect(badList.status).toBe(400);
    expect(badList.json.errors[0].detail).toBe('filter[tagged][x] must be a whole number from 0 to 49, got "x"');
    const noKey = await list('filter%5Btagged%5D%5B0%5D%5Bvalue%5D=prod');
    expect(noKey.status).toBe(400);
    expect(noKey.json.errors[0].detail).toBe('filter[tagged][0][key] is required when filter[tagged][0][value] is given, got ""');
    expect((await api('PATCH', path, reader.token, bindingBody({ a: 'b' }))).status).toBe(404);
    expect((await api('DELETE', path, reader.token)).status).toBe(404);
    expect((await api('GET', path, stranger.token)).status).toBe(404);
    expect((await api('GET', `/api/v2/workspaces/${ws['kv-prod']}/effective-tag-bindings`, stranger.token)).status).toBe(404);
    expect(await tagSnapshot(t)).toEqual(before);
  });
});
