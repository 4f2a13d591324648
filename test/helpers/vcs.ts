import type { TestServer } from './server.js';
import type { FakeVcsProvider } from './vcs-provider.js';

/** The oauth-clients create body go-tfe sends (name null when unset), with overrides. */
export function oauthClientBody(provider: FakeVcsProvider, pat: string, attributes: Record<string, unknown> = {}, relationships?: Record<string, unknown>) {
  const serviceProvider = provider.kind === 'gitlab' ? 'gitlab_hosted' : provider.kind;
  return {
    data: {
      type: 'oauth-clients',
      attributes: { name: null, 'api-url': provider.apiUrl, 'http-url': provider.httpUrl, 'service-provider': serviceProvider, 'oauth-token-string': pat, ...attributes },
      ...(relationships ? { relationships } : {}),
    },
  };
}

/**
 * Creates an OAuth client with a PAT the fake provider knows (as token, the site admin by
 * default); returns the client id and its one OAuth token id.
 */
export async function createOAuthClient(t: TestServer, org: string, provider: FakeVcsProvider, pat: string, opts: { token?: string; attributes?: Record<string, unknown> } = {}) {
  const res = await t.api('POST', `/api/v2/organizations/${org}/oauth-clients`, { token: opts.token, body: oauthClientBody(provider, pat, opts.attributes) });
  if (res.status !== 201) throw new Error(`create OAuth client in ${org}: ${res.status} ${res.text}`);
  return { clientId: res.json.data.id as string, tokenId: res.json.data.relationships['oauth-tokens'].data[0].id as string, data: res.json.data };
}

type VcsTable = 'oauth_clients' | 'oauth_tokens' | 'oauth_client_projects' | 'vcs_events';

/** Every row of the VCS tables: "nothing changed" is equality of two snapshots. */
export async function vcsRows(t: TestServer): Promise<Record<VcsTable, unknown[]>> {
  const db = t.running.deps.db;
  return {
    oauth_clients: await db.selectFrom('oauth_clients').selectAll().orderBy('id').execute(),
    oauth_tokens: await db.selectFrom('oauth_tokens').selectAll().orderBy('id').execute(),
    oauth_client_projects: await db.selectFrom('oauth_client_projects').selectAll().orderBy('oauth_client_id').orderBy('project_id').execute(),
    vcs_events: await db.selectFrom('vcs_events').selectAll().orderBy('id').execute(),
  };
}
