import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { readJson, readResource, requestBody } from '../../src/http/body.js';
import { accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createModule } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, stateFixture, stateVersionBody } from '../helpers/state.js';

/**
 * Who may act is decided before the body is read: a caller who may see a resource but not
 * change it (or may not see it at all) gets the same 404 whatever the body, and nothing
 * changes. A 422 for a bad body would reveal the resource.
 */

let t: TestServer;
type Caller = { name: string; token: string };
let owner: Caller;
let viewer: Caller;
let stranger: Caller;
let orgToken: Caller;
let wsId: string;
let teamId: string;
let ownerId: string;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  const o = await createUserWithToken(t, 'body-owner');
  const v = await createUserWithToken(t, 'body-viewer');
  const s = await createUserWithToken(t, 'body-stranger');
  await createUserWithToken(t, 'body-invitee');
  owner = { name: 'owner', token: o.token };
  viewer = { name: 'a member who may see but not change', token: v.token };
  stranger = { name: 'a user of another organization', token: s.token };
  ownerId = o.id;
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'elsewhere', { token: stranger.token });
  // The viewer reads workspaces and outputs and sees organization-visible teams and modules.
  const readers = await createTeam(t, owner.token, 'acme', 'readers', { visibility: 'organization', 'organization-access': { 'read-state-outputs': true } });
  await accept(t, viewer.token, await invite(t, owner.token, 'acme', 'body-viewer', [readers.id]));
  teamId = (await createTeam(t, owner.token, 'acme', 'devs', { visibility: 'organization' })).id;
  const tok = await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner.token });
  expect(tok.status).toBe(201);
  orgToken = { name: 'the organization token', token: tok.json.data.attributes.token };
  wsId = (await createWorkspace(t, 'acme', 'prod', owner.token)).id;
  await lock(t, wsId, owner.token);
  await createModule(t, 'acme', 'net', 'aws', owner.token);
  // Use every token once, so the snapshots below do not see a first last_used_at.
  for (const c of [owner, viewer, stranger, orgToken]) await t.api('GET', '/api/v2/ping', { token: c.token });
});

afterAll(async () => {
  await t?.close();
});

/** Every row of every table (token use times aside) and every blob key: "nothing changed" is equality. */
async function everything(): Promise<unknown> {
  const db = t.running.deps.db;
  const tables = (await db.introspection.getTables()).filter((x) => !x.isView).map((x) => x.name).sort();
  const rows: Record<string, unknown[]> = {};
  for (const name of tables) {
    const r = await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(db);
    rows[name] = r.rows.map(({ last_used_at: _ignored, ...rest }) => rest).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  const blobs: string[] = [];
  for await (const b of t.running.deps.blobs.list('')) blobs.push(b.key);
  return { rows, blobs: blobs.sort() };
}

interface Route {
  method: string;
  /** :owner, :team and :workspace stand for ids made in beforeAll. */
  path: string;
  good: () => unknown;
  /** Who may see the resource but not act; strangers are always tried too. */
  refused: () => Caller[];
  /** Who may act: a bad body from them must be refused by validation, proving the body is bad. */
  allowed: () => Caller;
  /** The lock action tolerates any body by design (go-tfe's reason is optional). */
  tolerant?: boolean;
  /** Any user may create an organization: a user of another organization is no stranger here. */
  openToAnyUser?: boolean;
}

const resolve = (path: string) => path.replace(':owner', ownerId).replace(':team', teamId).replace(':workspace', wsId);

const BAD_BODIES = ['{"data":5}', 'this is not JSON'];

const routes: Route[] = [
  { method: 'POST', path: '/api/v2/admin/users', good: () => ({ data: { type: 'users', attributes: { username: 'someone', email: 'someone@example.com' } } }), refused: () => [owner, viewer], allowed: () => ({ name: 'site admin', token: t.adminToken }) },
  { method: 'POST', path: '/api/v2/users/:owner/authentication-tokens', good: () => ({ data: { type: 'authentication-tokens', attributes: {} } }), refused: () => [viewer], allowed: () => owner },
  { method: 'POST', path: '/api/v2/organizations', good: () => ({ data: { type: 'organizations', attributes: { name: 'newco', email: 'a@newco.example' } } }), refused: () => [orgToken], allowed: () => owner, openToAnyUser: true },
  { method: 'PATCH', path: '/api/v2/organizations/acme', good: () => ({ data: { type: 'organizations', attributes: { email: 'x@acme.example' } } }), refused: () => [viewer, orgToken], allowed: () => owner },
  { method: 'POST', path: '/api/v2/organizations/acme/authentication-token', good: () => ({ data: { type: 'authentication-tokens', attributes: {} } }), refused: () => [viewer], allowed: () => owner },
  { method: 'POST', path: '/api/v2/organizations/acme/agent-pools', good: () => ({ data: { type: 'agent-pools', attributes: { name: 'pool' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'PATCH', path: '/api/v2/admin/organizations/acme/relationships/module-consumers', good: () => ({ data: [] }), refused: () => [owner, viewer], allowed: () => ({ name: 'site admin', token: t.adminToken }) },
  ...(['POST', 'PATCH'] as const).map((method) => ({
    method,
    path: '/api/v2/organizations/acme/relationships/data-retention-policy',
    good: () => ({ data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 30 } } }),
    refused: () => [viewer, orgToken],
    allowed: () => owner,
  })),
  { method: 'POST', path: '/api/v2/organizations/acme/organization-memberships', good: () => ({ data: { type: 'organization-memberships', attributes: { email: 'body-invitee@example.com' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'POST', path: '/api/v2/organizations/acme/teams', good: () => ({ data: { type: 'teams', attributes: { name: 'newteam' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'PATCH', path: '/api/v2/teams/:team', good: () => ({ data: { type: 'teams', attributes: { name: 'renamed' } } }), refused: () => [viewer], allowed: () => owner },
  ...(['POST', 'DELETE'] as const).flatMap((method) =>
    (['users', 'organization-memberships'] as const).map((kind) => ({
      method,
      path: `/api/v2/teams/:team/relationships/${kind}`,
      good: () => ({ data: [{ type: kind, id: kind === 'users' ? 'body-viewer' : 'ou-nonexistent' }] }),
      refused: () => [viewer],
      allowed: () => owner,
    })),
  ),
  { method: 'POST', path: '/api/v2/teams/:team/authentication-token', good: () => ({ data: { type: 'authentication-tokens', attributes: {} } }), refused: () => [viewer], allowed: () => owner },
  { method: 'POST', path: '/api/v2/organizations/acme/registry-modules', good: () => ({ data: { type: 'registry-modules', attributes: { name: 'db', provider: 'aws' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'POST', path: '/api/v2/organizations/acme/registry-modules/private/acme/net/aws/versions', good: () => ({ data: { type: 'registry-module-versions', attributes: { version: '1.0.0' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'POST', path: '/api/v2/organizations/acme/workspaces', good: () => ({ data: { type: 'workspaces', attributes: { name: 'new-ws' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'PATCH', path: '/api/v2/organizations/acme/workspaces/prod', good: () => ({ data: { type: 'workspaces', attributes: { description: 'changed' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'PATCH', path: '/api/v2/workspaces/:workspace', good: () => ({ data: { type: 'workspaces', attributes: { description: 'changed' } } }), refused: () => [viewer], allowed: () => owner },
  { method: 'POST', path: '/api/v2/workspaces/:workspace/actions/lock', good: () => ({ reason: 'mine' }), refused: () => [viewer], allowed: () => owner, tolerant: true },
  { method: 'POST', path: '/api/v2/workspaces/:workspace/state-versions', good: () => stateVersionBody(stateFixture('outputs-serial1.json')), refused: () => [viewer], allowed: () => owner },
];

describe('every route that takes a body decides who may act before reading it', () => {
  for (const r of routes) {
    const label = `${r.method} ${r.path}`;

    it(`${label}: the same 404 for a bad body as for a good one, and nothing changes`, async () => {
      const before = await everything();
      for (const caller of r.openToAnyUser ? r.refused() : [...r.refused(), stranger]) {
        const good = await t.api(r.method, resolve(r.path), { token: caller.token, body: r.good() });
        expect(good.status, `${caller.name}, good body: ${good.text}`).toBe(404);
        expect(good.json.errors[0].status).toBe('404');
        expect(typeof good.json.errors[0].detail).toBe('string');
        for (const bad of BAD_BODIES) {
          const res = await t.api(r.method, resolve(r.path), { token: caller.token, rawBody: bad });
          expect(res.status, `${caller.name}, body ${bad}: ${res.text}`).toBe(404);
          expect(res.json).toEqual(good.json);
        }
      }
      expect(await everything()).toEqual(before);
    });

    if (!r.tolerant) {
      it(`${label}: a bad body from whoever may act is refused by validation, changing nothing`, async () => {
        const before = await everything();
        for (const bad of BAD_BODIES) {
          const res = await t.api(r.method, resolve(r.path), { token: r.allowed().token, rawBody: bad });
          expect([400, 422], `${bad}: ${res.text}`).toContain(res.status);
          expect(res.json.errors[0].detail).toMatch(/data|JSON/);
        }
        expect(await everything()).toEqual(before);
      });
    }
  }
});

describe('a handler that reads a body before authorizing', () => {
  it('gets an internal error from every body reader, and the body is not read', async () => {
    const app = createApp(t.running.deps);
    let reached = false;
    app.post('/probe/json', async (c) => c.json(await readJson(c)));
    app.post('/probe/resource', async (c) => c.json(await readResource(c, 'things', (await import('zod')).z.object({}))));
    app.post('/probe/stream', (c) => {
      requestBody(c).on('data', () => (reached = true));
      return c.body(null, 204);
    });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const path of ['/probe/json', '/probe/resource', '/probe/stream']) {
        const res = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"data":{"type":"things"}}' });
        expect(res.status, path).toBe(500);
        const body = (await res.json()) as { errors: { detail: string }[] };
        expect(body.errors[0]!.detail).toMatch(/^an internal error occurred; quote request id \S+ when reporting it$/);
      }
      expect(reached).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
