import type { TestServer } from './server.js';

export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Creates an organization as the holder of token (the site admin by default); returns data. */
export async function createOrg(t: TestServer, name: string, opts: { token?: string; attributes?: Record<string, unknown> } = {}) {
  const res = await t.api('POST', '/api/v2/organizations', {
    token: opts.token,
    body: { data: { type: 'organizations', attributes: { name, email: `ops@${name.toLowerCase()}.example.com`, ...opts.attributes } } },
  });
  if (res.status !== 201) throw new Error(`create organization ${name}: ${res.status} ${res.text}`);
  return res.json.data;
}

/** Invites user into org (optionally into teams) as ownerToken; returns the membership id. */
export async function invite(t: TestServer, ownerToken: string, org: string, username: string, teamIds: string[] = []): Promise<string> {
  const res = await t.api('POST', `/api/v2/organizations/${org}/organization-memberships`, {
    token: ownerToken,
    body: {
      data: {
        type: 'organization-memberships',
        attributes: { email: `${username}@example.com` },
        relationships: { teams: { data: teamIds.map((id) => ({ type: 'teams', id })) } },
      },
    },
  });
  if (res.status !== 201) throw new Error(`invite ${username} into ${org}: ${res.status} ${res.text}`);
  return res.json.data.id;
}

export async function accept(t: TestServer, userToken: string, membershipId: string): Promise<void> {
  const res = await t.api('POST', `/api/v2/organization-memberships/${membershipId}/actions/accept`, { token: userToken });
  if (res.status !== 200) throw new Error(`accept ${membershipId}: ${res.status} ${res.text}`);
}

export async function createTeam(t: TestServer, token: string, org: string, name: string, attributes: Record<string, unknown> = {}) {
  const res = await t.api('POST', `/api/v2/organizations/${org}/teams`, {
    token,
    body: { data: { type: 'teams', attributes: { name, ...attributes } } },
  });
  if (res.status !== 201) throw new Error(`create team ${name}: ${res.status} ${res.text}`);
  return res.json.data;
}

/** The owners team of org, as seen by token. */
export async function ownersTeam(t: TestServer, token: string, org: string) {
  const res = await t.api('GET', `/api/v2/organizations/${org}/teams?filter%5Bnames%5D=owners`, { token });
  if (res.status !== 200 || res.json.data.length !== 1) throw new Error(`owners team of ${org}: ${res.status} ${res.text}`);
  return res.json.data[0];
}

type Table = 'organizations' | 'teams' | 'team_members' | 'organization_memberships' | 'tokens' | 'agent_pools' | 'organization_module_producers' | 'data_retention_policies';

export async function countRows(t: TestServer, table: Table): Promise<number> {
  const r = await t.running.deps.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Row counts of every table this domain writes: "nothing changed" is equality of two snapshots. */
export async function snapshot(t: TestServer): Promise<Record<Table, number>> {
  const tables: Table[] = ['organizations', 'teams', 'team_members', 'organization_memberships', 'tokens', 'agent_pools', 'organization_module_producers', 'data_retention_policies'];
  const out = {} as Record<Table, number>;
  for (const table of tables) out[table] = await countRows(t, table);
  return out;
}
