import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createModule, createOrganization, createVersion, moduleTarball, publish, upload } from '../helpers/registry.js';
import { createTeam as createOrgTeam } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let member: { id: string; username: string; token: string };
let publisher: { id: string; username: string; token: string };
let consumer: { id: string; username: string; token: string };

const versionBody = (version: string) => ({ data: { type: 'registry-module-versions', attributes: { version } } });

async function createTeam(org: string, name: string, access: Record<string, boolean>): Promise<string> {
  return (await createOrgTeam(t, t.adminToken, org, name, { 'organization-access': access, visibility: 'organization' })).id;
}

beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  await createOrganization(t, 'shared');
  await createOrganization(t, 'consumer');
  await publish(t, 'acme', 'vpc', 'aws', '1.0.0');
  await publish(t, 'shared', 'base', 'aws', '1.0.0');
  member = await createUserWithToken(t, 'member');
  publisher = await createUserWithToken(t, 'publisher');
  consumer = await createUserWithToken(t, 'consumer-user');
  await addMember(t, 'acme', member);
  await addMember(t, 'acme', publisher);
  await addMember(t, 'consumer', consumer);
  const team = await createTeam('acme', 'module-publishers', { 'manage-modules': true });
  const add = await t.api('POST', `/api/v2/teams/${team}/relationships/users`, { body: { data: [{ type: 'users', id: 'publisher' }] } });
  expect(add.status).toBe(204);
});
afterAll(async () => {
  await t.close();
});

describe('who may read', () => {
  it('a member without any team permission reads and downloads', async () => {
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions', { token: member.token })).status).toBe(200);
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0/download', { token: member.token })).status).toBe(204);
    expect((await t.api('GET', '/v1/modules', { token: member.token })).json.modules.map((m: any) => m.namespace)).toEqual(['acme']);
  });

  it('an invited user who has not accepted reads nothing', async () => {
    const invited = await createUserWithToken(t, 'invited');
    const inv = await t.api('POST', '/api/v2/organizations/acme/organization-memberships', {
      body: { data: { type: 'organization-memberships', attributes: { email: 'invited@example.com' } } },
    });
    expect(inv.status).toBe(201);
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions', { token: invited.token })).status).toBe(404);
  });

  it('members of a consumer organization read a producer\'s modules once a site admin links them', async () => {
    expect((await t.api('GET', '/v1/modules/shared/base/aws/versions', { token: consumer.token })).status).toBe(404);
    const link = await t.api('PATCH', '/api/v2/admin/organizations/shared/relationships/module-consumers', {
      body: { data: [{ type: 'organizations', id: 'consumer' }] },
    });
    expect(link.status).toBe(204);
    expect((await t.api('GET', '/v1/modules/shared/base/aws/versions', { token: consumer.token })).status).toBe(200);
    expect((await t.api('GET', '/v1/modules/search?q=base', { token: consumer.token })).json.modules).toHaveLength(1);
    // Consuming is read-only, and does not extend to other organizations.
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions', { token: consumer.token })).status).toBe(404);
    const pub = await t.api('POST', '/api/v2/organizations/shared/registry-modules/private/shared/base/aws/versions', {
      token: consumer.token,
      body: versionBody('2.0.0'),
    });
    expect(pub.status).toBe(404);
  });
});

describe('who may publish', () => {
  it('not a member without manage-modules', async () => {
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/versions', { token: member.token, body: versionBody('1.1.0') });
    expect(r.status).toBe(404);
    const del = await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws', { token: member.token });
    expect(del.status).toBe(404);
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions')).json.modules[0].versions).toHaveLength(1);
  });

  it('a member of a team with manage-modules', async () => {
    await createModule(t, 'acme', 'dns', 'aws', publisher.token);
    const v = await createVersion(t, 'acme', 'dns', 'aws', '1.0.0', publisher.token);
    expect((await upload(v.links.upload, await moduleTarball())).status).toBe(200);
    const mod = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/dns/aws', { token: publisher.token });
    expect(mod.json.data.attributes.permissions['can-delete']).toBe(true);
    const asMember = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/dns/aws', { token: member.token });
    expect(asMember.json.data.attributes.permissions['can-delete']).toBe(false);
  });

  it('the organization token, and only in its organization', async () => {
    const tok = await t.api('POST', '/api/v2/organizations/acme/authentication-token', { body: { data: { type: 'authentication-token' } } });
    expect(tok.status).toBe(201);
    const orgToken = tok.json.data.attributes.token;
    await createModule(t, 'acme', 'ci', 'aws', orgToken);
    expect((await t.api('GET', '/v1/modules/acme/ci/aws/versions', { token: orgToken })).status).toBe(200);
    const other = await t.api('POST', '/api/v2/organizations/shared/registry-modules', {
      token: orgToken,
      body: { data: { type: 'registry-modules', attributes: { name: 'x', provider: 'aws' } } },
    });
    expect(other.status).toBe(404);
  });

  it('a team token of a team with manage-modules', async () => {
    const team = await createTeam('acme', 'ci-bots', { 'manage-modules': true });
    const tok = await t.api('POST', `/api/v2/teams/${team}/authentication-token`, { body: { data: { type: 'authentication-token' } } });
    expect(tok.status).toBe(201);
    await createModule(t, 'acme', 'bot', 'aws', tok.json.data.attributes.token);
    const reader = await createTeam('acme', 'readers', {});
    const readerTok = await t.api('POST', `/api/v2/teams/${reader}/authentication-token`, { body: { data: { type: 'authentication-token' } } });
    const refused = await t.api('POST', '/api/v2/organizations/acme/registry-modules', {
      token: readerTok.json.data.attributes.token,
      body: { data: { type: 'registry-modules', attributes: { name: 'nope', provider: 'aws' } } },
    });
    expect(refused.status).toBe(404);
    expect((await t.api('GET', '/v1/modules/acme/bot/aws/versions', { token: readerTok.json.data.attributes.token })).status).toBe(200);
  });
});

describe('organizations and modules together', () => {
  it('a renamed organization keeps its modules under the new namespace, search included', async () => {
    await createOrganization(t, 'oldname');
    await publish(t, 'oldname', 'thing', 'aws', '1.0.0');
    const r = await t.api('PATCH', '/api/v2/organizations/oldname', { body: { data: { type: 'organizations', attributes: { name: 'newname' } } } });
    expect(r.status).toBe(200);
    expect((await t.api('GET', '/v1/modules/newname/thing/aws/versions')).status).toBe(200);
    expect((await t.api('GET', '/v1/modules/oldname/thing/aws/versions')).status).toBe(404);
    const s = await t.api('GET', '/v1/modules/search?q=newname');
    expect(s.json.modules.map((m: any) => `${m.namespace}/${m.name}`)).toEqual(['newname/thing']);
  });

  it('destroying an organization removes its modules, versions, search entries and archives', async () => {
    await createOrganization(t, 'doomed');
    await publish(t, 'doomed', 'thing', 'aws', '1.0.0');
    await publish(t, 'doomed', 'thing', 'aws', '1.1.0');
    const org = await t.running.deps.db.selectFrom('organizations').select('id').where('name', '=', 'doomed').executeTakeFirstOrThrow();
    const blobsBefore: string[] = [];
    for await (const b of t.running.deps.blobs.list(`modules/${org.id}/`)) blobsBefore.push(b.key);
    expect(blobsBefore).toHaveLength(2);
    expect((await t.api('DELETE', '/api/v2/organizations/doomed')).status).toBe(204);
    const left: string[] = [];
    for await (const b of t.running.deps.blobs.list(`modules/${org.id}/`)) left.push(b.key);
    expect(left).toEqual([]);
    const db = t.running.deps.db;
    expect(await db.selectFrom('registry_modules').select('id').where('organization_id', '=', org.id).execute()).toEqual([]);
    const { sql } = await import('kysely');
    const fts = await sql<{ n: number }>`select count(*) as n from registry_search where namespace = 'doomed'`.execute(db);
    expect(Number(fts.rows[0]!.n)).toBe(0);
    expect((await t.api('GET', '/v1/modules/search?q=doomed')).json.modules).toEqual([]);
  });
});
