import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accept, createOrg, createTeam, invite, RFC3339 } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { bindingBody, tagSnapshot } from '../helpers/tags.js';

let t: TestServer;
let owner: { token: string };
let planner: { token: string };
let reader: { token: string };
let plain: { token: string };
let stranger: { token: string };

const api = (method: string, path: string, token: string, body?: unknown) => t.api(method, path, { token, body });
const projectBody = (attributes: Record<string, unknown>, relationships?: Record<string, unknown>) => ({ data: { type: 'projects', attributes, ...(relationships ? { relationships } : {}) } });
const names = (r: { json: { data: { attributes: { name: string } }[] } }) => r.json.data.map((d) => d.attributes.name);

beforeAll(async () => {
  t = await startTestServer();
  owner = await createUserWithToken(t, 'prj-owner');
  planner = await createUserWithToken(t, 'prj-planner');
  reader = await createUserWithToken(t, 'prj-reader');
  plain = await createUserWithToken(t, 'prj-plain');
  stranger = await createUserWithToken(t, 'prj-stranger');
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'other', { token: stranger.token });
  const planners = await createTeam(t, owner.token, 'acme', 'planners', { 'organization-access': { 'manage-projects': true } });
  const readers = await createTeam(t, owner.token, 'acme', 'readers', { 'organization-access': { 'read-state-outputs': true } });
  const nobody = await createTeam(t, owner.token, 'acme', 'nobody');
  await accept(t, planner.token, await invite(t, owner.token, 'acme', 'prj-planner', [planners.id]));
  await accept(t, reader.token, await invite(t, owner.token, 'acme', 'prj-reader', [readers.id]));
  await accept(t, plain.token, await invite(t, owner.token, 'acme', 'prj-plain', [nobody.id]));
});
afterAll(async () => t?.close());

let defaultId: string;
let infra: any;

describe('the default project', () => {
  it('comes with every organization, in go-tfe\'s Project shape', async () => {
    const r = await api('GET', '/api/v2/organizations/acme/projects', reader.token);
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(1);
    const d = r.json.data[0];
    defaultId = d.id;
    expect(d.id).toMatch(/^prj-[A-Za-z0-9]{16}$/);
    expect(d.type).toBe('projects');
    expect(d.attributes).toMatchObject({ name: 'Default Project', description: '', 'is-unified': false, 'is-default': true, 'workspace-count': 0 });
    expect(d.attributes['created-at']).toMatch(RFC3339);
    expect(d.attributes.permissions).toMatchObject({ 'can-read': true, 'can-update': false, 'can-destroy': false });
    for (const v of Object.values(d.attributes.permissions)) expect(typeof v).toBe('boolean');
    expect(d.relationships.organization.data).toEqual({ id: 'acme', type: 'organizations' });
    expect(d.links.self).toBe(`/api/v2/projects/${d.id}`);
  });

  it('holds workspaces created without a project, which name it in relationships.project', async () => {
    const w = await api('POST', '/api/v2/organizations/acme/workspaces', owner.token, { data: { type: 'workspaces', attributes: { name: 'loose' } } });
    expect(w.json.data.relationships.project.data).toEqual({ id: defaultId, type: 'projects' });
    const listed = await api('GET', '/api/v2/organizations/acme/workspaces', owner.token);
    expect(listed.json.data[0].relationships.project.data).toEqual({ id: defaultId, type: 'projects' });
  });

  it('cannot be deleted', async () => {
    const r = await api('DELETE', `/api/v2/projects/${defaultId}`, owner.token);
    expect(r.status).toBe(422);
    expect(r.json.errors[0].detail).toBe('"Default Project" is the organization\'s default project and cannot be deleted');
  });
});

describe('create, show, update, delete', () => {
  it('creates a project as an owner or a manage-projects member', async () => {
    const r = await api('POST', '/api/v2/organizations/acme/projects', planner.token, projectBody({ name: 'infra', description: 'networks' }));
    expect(r.status).toBe(201);
    infra = r.json.data;
    expect(infra.attributes).toMatchObject({ name: 'infra', description: 'networks', 'is-default': false, 'workspace-count': 0 });
    expect(infra.attributes.permissions).toMatchObject({ 'can-update': true, 'can-destroy': true });
    const o = await api('POST', '/api/v2/organizations/acme/projects', owner.token, projectBody({ name: 'Data Platform' }, { 'tag-bindings': bindingBody({ env: 'prod' }) }));
    expect(o.status).toBe(201);
    const b = await api('GET', `/api/v2/projects/${o.json.data.id}/tag-bindings`, reader.token);
    expect(b.json.data.map((d: any) => [d.type, d.attributes.key, d.attributes.value])).toEqual([['tag-bindings', 'env', 'prod']]);
  });

  it('lists with filter[names] (exact, any of several, any case), q and paging', async () => {
    expect(names(await api('GET', '/api/v2/organizations/acme/projects', owner.token))).toEqual(['Data Platform', 'Default Project', 'infra']);
    expect(names(await api('GET', '/api/v2/organizations/acme/projects?filter%5Bnames%5D=infra', owner.token))).toEqual(['infra']);
    expect(names(await api('GET', '/api/v2/organizations/acme/projects?filter%5Bnames%5D=INFRA,data%20platform', owner.token))).toEqual(['Data Platform', 'infra']);
    expect(names(await api('GET', '/api/v2/organizations/acme/projects?filter%5Bnames%5D=inf', owner.token))).toEqual([]);
    expect(names(await api('GET', '/api/v2/organizations/acme/projects?q=PLAT', owner.token))).toEqual(['Data Platform']);
    const paged = await api('GET', '/api/v2/organizations/acme/projects?page%5Bsize%5D=2&page%5Bnumber%5D=2', owner.token);
    expect(names(paged)).toEqual(['infra']);
    expect(paged.json.meta.pagination).toMatchObject({ 'current-page': 2, 'total-pages': 2, 'total-count': 3 });
  });

  it('shows a project to whoever sees the organization\'s workspaces; members without that see none', async () => {
    expect((await api('GET', `/api/v2/projects/${infra.id}`, reader.token)).json.data.attributes.name).toBe('infra');
    const plainList = await api('GET', '/api/v2/organizations/acme/projects', plain.token);
    expect(plainList.status).toBe(200);
    expect(plainList.json.data).toEqual([]);
    expect((await api('GET', `/api/v2/projects/${infra.id}`, plain.token)).status).toBe(404);
    expect((await api('GET', `/api/v2/projects/${infra.id}`, stranger.token)).status).toBe(404);
    expect((await api('GET', '/api/v2/organizations/acme/projects', stranger.token)).status).toBe(404);
    expect((await api('GET', `/api/v2/projects/${infra.id}`, '')).status).toBe(401);
  });

  it('renames and describes a project', async () => {
    const r = await api('PATCH', `/api/v2/projects/${infra.id}`, planner.token, projectBody({ name: 'infrastructure' }));
    expect(r.status).toBe(200);
    expect(r.json.data.attributes).toMatchObject({ name: 'infrastructure', description: 'networks' });
    const d = await api('PATCH', `/api/v2/projects/${infra.id}`, owner.token, projectBody({ description: null }));
    expect(d.json.data.attributes).toMatchObject({ name: 'infrastructure', description: '' });
  });

  it('refuses bad input and callers who may not act, changing nothing', async () => {
    const before = await tagSnapshot(t);
    const bad: [string, string, unknown, number, string][] = [
      ['POST', '/api/v2/organizations/acme/projects', projectBody({ name: 'ab' }), 422, 'name: must be 3-40 letters, digits, spaces, "-" or "_", not starting or ending with a space'],
      ['POST', '/api/v2/organizations/acme/projects', projectBody({ name: ' padded' }), 422, 'name: must be 3-40 letters, digits, spaces, "-" or "_", not starting or ending with a space'],
      ['POST', '/api/v2/organizations/acme/projects', projectBody({ name: 'x'.repeat(41) }), 422, 'name: must be 3-40 letters, digits, spaces, "-" or "_", not starting or ending with a space'],
      ['POST', '/api/v2/organizations/acme/projects', projectBody({}), 422, 'name: is required'],
      ['POST', '/api/v2/organizations/acme/projects', projectBody({ name: 'DEFAULT project' }), 422, 'name: "DEFAULT project" has already been taken'],
      ['POST', '/api/v2/organizations/acme/projects', projectBody({ name: 'okay' }, { 'tag-bindings': { data: [{ type: 'tag-bindings', attributes: { key: '' } }] } }), 422, 'data[0].attributes.key "" must be 1-255 letters, digits, ":", "-" or "_"'],
      ['POST', '/api/v2/organizations/acme/projects', { data: { type: 'workspaces', attributes: { name: 'okay' } } }, 422, 'data.type must be "projects", got "workspaces"'],
      ['PATCH', `/api/v2/projects/${infra.id}`, projectBody({ name: 'Data Platform' }), 422, 'name: "Data Platform" has already been taken'],
      ['PATCH', `/api/v2/projects/${infra.id}`, projectBody({ description: 7 }), 422, 'description: must be a string'],
      ['PATCH', `/api/v2/projects/${infra.id}/tag-bindings`, { data: [] }, 422, 'data must list at least one item'],
    ];
    for (const [method, path, body, status, detail] of bad) {
      const r = await api(method, path, owner.token, body);
      expect(r.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
      expect(r.json.errors[0].detail).toBe(detail);
    }
    // Callers who may see but not manage projects, or not see them: 404, before the body is read.
    for (const token of [reader.token, plain.token, stranger.token]) {
      expect((await api('POST', '/api/v2/organizations/acme/projects', token, { data: 'junk' })).status).toBe(404);
      expect((await api('PATCH', `/api/v2/projects/${infra.id}`, token, { data: 'junk' })).status).toBe(404);
      expect((await api('PATCH', `/api/v2/projects/${infra.id}/tag-bindings`, token, { data: 'junk' })).status).toBe(404);
      expect((await api('DELETE', `/api/v2/projects/${infra.id}`, token)).status).toBe(404);
    }
    expect(await tagSnapshot(t)).toEqual(before);
  });

  it('adds bindings to a project; its effective bindings are its own', async () => {
    const r = await api('PATCH', `/api/v2/projects/${infra.id}/tag-bindings`, planner.token, bindingBody({ tier: 'core' }));
    expect(r.status).toBe(200);
    expect(r.json.data.map((d: any) => [d.attributes.key, d.attributes.value])).toEqual([['tier', 'core']]);
    const eff = await api('GET', `/api/v2/projects/${infra.id}/effective-tag-bindings`, reader.token);
    expect(eff.json.data.map((d: any) => [d.type, d.attributes.key])).toEqual([['effective-tag-bindings', 'tier']]);
  });
});

describe('workspaces in projects', () => {
  let w: any;

  it('creates a workspace in a project (go-tfe sends a full projects node) and filters the list by filter[project][id]', async () => {
    const r = await api('POST', '/api/v2/organizations/acme/workspaces', owner.token, {
      data: { type: 'workspaces', attributes: { name: 'net' }, relationships: { project: { data: { type: 'projects', id: infra.id, attributes: { name: 'infrastructure', 'is-unified': false } } } } },
    });
    expect(r.status).toBe(201);
    w = r.json.data;
    expect(w.relationships.project.data).toEqual({ id: infra.id, type: 'projects' });
    const listed = await api('GET', `/api/v2/organizations/acme/workspaces?filter%5Bproject%5D%5Bid%5D=${infra.id}`, reader.token);
    expect(names(listed)).toEqual(['net']);
    expect((await api('GET', `/api/v2/projects/${infra.id}`, owner.token)).json.data.attributes['workspace-count']).toBe(1);
  });

  it('refuses a project of another organization or an unknown one with 422, creating nothing', async () => {
    const theirs = (await api('GET', '/api/v2/organizations/other/projects', stranger.token)).json.data[0];
    const before = await tagSnapshot(t);
    for (const id of [theirs.id, 'prj-unknown']) {
      const r = await api('POST', '/api/v2/organizations/acme/workspaces', owner.token, { data: { type: 'workspaces', attributes: { name: 'nope' }, relationships: { project: { data: { type: 'projects', id } } } } });
      expect(r.status).toBe(422);
      expect(r.json.errors[0].detail).toBe(`relationships.project: "${id}" is not a project of organization "acme"`);
      expect(r.json.errors[0].source.pointer).toBe('/data/relationships/project/data/id');
    }
    const shape = await api('POST', '/api/v2/organizations/acme/workspaces', owner.token, { data: { type: 'workspaces', attributes: { name: 'nope' }, relationships: { project: { data: { type: 'teams', id: 'x' } } } } });
    expect(shape.status).toBe(422);
    expect(shape.json.errors[0].detail).toBe('relationships.project.data must be {"type":"projects","id":"prj-…"} or null');
    expect(await tagSnapshot(t)).toEqual(before);
  });

  it('a non-empty project cannot be deleted (409); moved out, it can', async () => {
    const refused = await api('DELETE', `/api/v2/projects/${infra.id}`, owner.token);
    expect(refused.status).toBe(409);
    expect(refused.json.errors[0].detail).toBe('project "infrastructure" still holds 1 workspace; move or delete them first');
    const moved = await api('PATCH', `/api/v2/workspaces/${w.id}`, owner.token, { data: { type: 'workspaces', relationships: { project: { data: null } } } });
    expect(moved.status).toBe(200);
    expect(moved.json.data.relationships.project.data.id).toBe(defaultId);
    expect((await api('DELETE', `/api/v2/projects/${infra.id}`, planner.token)).status).toBe(204);
    expect((await api('DELETE', `/api/v2/projects/${infra.id}`, planner.token)).status).toBe(404);
    expect(await t.running.deps.db.selectFrom('tag_bindings').selectAll().where('project_id', '=', infra.id).execute()).toEqual([]);
  });

  it('team permissions offer manage-projects; the organization says who may create projects', async () => {
    const org = await api('GET', '/api/v2/organizations/acme', planner.token);
    expect(org.json.data.attributes.permissions['can-create-project']).toBe(true);
    expect((await api('GET', '/api/v2/organizations/acme', reader.token)).json.data.attributes.permissions['can-create-project']).toBe(false);
  });
});

describe('deleting the organization', () => {
  it('removes its projects, tags and bindings', async () => {
    await createOrg(t, 'gone', { token: owner.token });
    const p = await api('POST', '/api/v2/organizations/gone/projects', owner.token, projectBody({ name: 'soon' }, { 'tag-bindings': bindingBody({ a: 'b' }) }));
    await api('POST', '/api/v2/organizations/gone/workspaces', owner.token, {
      data: { type: 'workspaces', attributes: { name: 'w', 'tag-names': ['x'] }, relationships: { project: { data: { type: 'projects', id: p.json.data.id } }, 'tag-bindings': bindingBody({ c: 'd' }) } },
    });
    const orgId = (await t.running.deps.db.selectFrom('organizations').select('id').where('name', '=', 'gone').executeTakeFirstOrThrow()).id;
    expect((await api('DELETE', '/api/v2/organizations/gone', owner.token)).status).toBe(204);
    const db = t.running.deps.db;
    expect(await db.selectFrom('projects').selectAll().where('organization_id', '=', orgId).execute()).toEqual([]);
    expect(await db.selectFrom('tags').selectAll().where('organization_id', '=', orgId).execute()).toEqual([]);
    expect(await db.selectFrom('tag_bindings').selectAll().where('project_id', '=', p.json.data.id).execute()).toEqual([]);
    const orphans = await db.selectFrom('tag_bindings').selectAll().where('workspace_id', 'is', null).where('project_id', 'is', null).execute();
    expect(orphans).toEqual([]);
  });
});
