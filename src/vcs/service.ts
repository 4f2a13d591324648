import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { newId, randomBase62 } from '../ids.js';
import { orgAccess, type OrganizationRow } from '../organizations/access.js';
import type { ManagedClient, ManagedToken } from './access.js';
import { PROVIDER_DISPLAY_NAMES, type VcsConnection, type VcsServiceProvider } from './connection.js';
import { recordVcsEvent } from './events.js';
import { providerUser, ProviderError } from './provider.js';
import { normalizeVcsUrl, vcsUrlProblem, type CreateClientInput, type UpdateClientInput, type UpdateTokenInput } from './settings.js';
import {
  deleteOAuthClientRow,
  deleteOAuthTokenRow,
  getOAuthClient,
  getOAuthToken,
  insertOAuthClient,
  insertOAuthToken,
  openSecret,
  projectIdsInOrganization,
  replaceClientProjects,
  addClientProjects,
  removeClientProjects,
  sealSecret,
  tokensOfClients,
  tokenWithClient,
  updateOAuthClientRow,
  updateOAuthTokenRow,
  type OAuthClientRow,
  type OAuthTokenRow,
} from './store.js';

export type { VcsConnection } from './connection.js';
export { recordVcsEvent } from './events.js';
export { canManageVcs } from './access.js';

const ATTR = (k: string) => `/data/attributes/${k}`;

// ---- what other domains use ----

type TokenDeletedHook = (deps: Deps, oauthTokenId: string) => Promise<void>;
const tokenDeletedHooks = new Set<TokenDeletedHook>();

/** Called after an OAuth token (or the client holding it) is deleted, once the delete has committed. */
export function registerOAuthTokenDeletedHook(fn: TokenDeletedHook): void {
  tokenDeletedHooks.add(fn);
}

async function runTokenDeletedHooks(deps: Deps, oauthTokenId: string): Promise<void> {
  for (const fn of tokenDeletedHooks) {
    try {
      await fn(deps, oauthTokenId);
    } catch (err) {
      // The delete has happened; a participant that failed to react must not turn it into a 500.
      deps.logger.error({ err: (err as Error).message, oauthToken: oauthTokenId }, 'OAuth token deleted hook failed');
    }
  }
}

function connectionOf(deps: Deps, client: OAuthClientRow, token: OAuthTokenRow): VcsConnection {
  return {
    oauthClientId: client.id,
    oauthTokenId: token.id,
    organizationId: client.organization_id,
    serviceProvider: client.service_provider,
    apiUrl: client.api_url,
    httpUrl: client.http_url,
    token: openSecret(deps.secrets, token.token_sealed)!,
  };
}

/** For background work (no principal): the connection behind a token, or undefined if it is gone. */
export async function connectionForToken(deps: Deps, oauthTokenId: string): Promise<VcsConnection | undefined> {
  const found = await tokenWithClient(deps.db, oauthTokenId);
  return found ? connectionOf(deps, found.client, found.token) : undefined;
}

/**
 * For API calls that attach a token (module create): the connection, or 422 when the token is
 * not one of the organization's or the caller is not a member of it. The calling domain checks
 * its own permission (manage-modules) first.
 */
export async function usableConnection(deps: Deps, p: Principal, organizationId: string, oauthTokenId: string): Promise<VcsConnection> {
  const found = await tokenWithClient(deps.db, oauthTokenId);
  const access = await orgAccess(deps.db, p, organizationId);
  if (!found || found.client.organization_id !== organizationId || !access.member) {
    throw unprocessable(
      `oauth-token-id ${quoteValue(oauthTokenId)} is not an OAuth token of this organization: list them with GET /api/v2/organizations/:org/oauth-tokens`,
      ATTR('vcs-repo/oauth-token-id'),
    );
  }
  return connectionOf(deps, found.client, found.token);
}

// ---- OAuth clients and tokens ----

function checkUrl(name: 'api-url' | 'http-url', value: string): string {
  const problem = vcsUrlProblem(value);
  if (problem) throw unprocessable(`${name} ${problem}`, ATTR(name));
  return normalizeVcsUrl(value);
}

async function checkProjects(deps: Deps, org: OrganizationRow, ids: string[] | undefined): Promise<string[] | undefined> {
  if (ids === undefined) return undefined;
  const unique = [...new Set(ids)];
  const known = await projectIdsInOrganization(deps.db, org.id, unique);
  const unknown = unique.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw unprocessable(`projects not found in organization ${quoteValue(org.name)}: ${unknown.slice(0, 10).map((i) => quoteValue(i)).join(', ')}`, '/data/relationships/projects');
  }
  return unique;
}

/**
 * Asks the provider who owns the token. A refusal becomes a 422 naming what the provider said,
 * and an error in the organization's VCS event log.
 */
async function verifiedUser(
  deps: Deps,
  org: OrganizationRow,
  c: Omit<VcsConnection, 'oauthClientId' | 'oauthTokenId'> & { oauthClientId: string | null; oauthTokenId: string | null },
): Promise<string> {
  try {
    return await providerUser(deps, { ...c, oauthClientId: c.oauthClientId ?? '', oauthTokenId: c.oauthTokenId ?? '' });
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    await recordVcsEvent(deps, {
      organizationId: org.id,
      level: 'error',
      message: `Could not verify the personal access token: ${err.message}`,
      suggestedAction: 'check the token and its scopes, and that api-url points at the provider\'s API',
      oauthClientId: c.oauthClientId,
      oauthTokenId: c.oauthTokenId,
    });
    throw unprocessable(`oauth-token-string was refused: GET ${c.apiUrl}/user failed (${err.message}); check the token and api-url`, ATTR('oauth-token-string'));
  }
}

export async function createClient(deps: Deps, p: Principal, org: OrganizationRow, input: CreateClientInput, projectIds: string[] | undefined): Promise<OAuthClientRow> {
  const apiUrl = checkUrl('api-url', input['api-url']);
  const httpUrl = checkUrl('http-url', input['http-url']);
  const provider = input['service-provider'] as VcsServiceProvider;
  const projects = await checkProjects(deps, org, projectIds);
  const pat = input['oauth-token-string'];
  if (typeof pat !== 'string' || pat.trim() === '') {
    throw unprocessable('oauth-token-string is required: Terrace connects to GitHub and GitLab with a personal access token', ATTR('oauth-token-string'));
  }
  const clientId = newId('oc');
  const tokenId = newId('ot');
  const user = await verifiedUser(deps, org, { oauthClientId: null, oauthTokenId: null, organizationId: org.id, serviceProvider: provider, apiUrl, httpUrl, token: pat });
  const now = rfc3339(deps.clock.now());
  const client: OAuthClientRow = {
    id: clientId,
    organization_id: org.id,
    name: input.name ?? null,
    service_provider: provider,
    http_url: httpUrl,
    api_url: apiUrl,
    key: input.key ?? null,
    secret_sealed: sealSecret(deps.secrets, input.secret),
    rsa_public_key: input['rsa-public-key'] ?? null,
    organization_scoped: input['organization-scoped'] === false ? 0 : 1,
    created_at: now,
    updated_at: now,
  };
  const token: OAuthTokenRow = {
    id: tokenId,
    oauth_client_id: clientId,
    organization_id: org.id,
    token_sealed: sealSecret(deps.secrets, pat)!,
    ssh_key_sealed: null,
    service_provider_user: user,
    uid: randomBase62(20),
    created_at: now,
    updated_at: now,
  };
  await inTransaction(deps.db, async (tx) => {
    await insertOAuthClient(tx, client);
    await insertOAuthToken(tx, token);
    if (projects) await replaceClientProjects(tx, clientId, projects);
  });
  await recordVcsEvent(deps, {
    organizationId: org.id,
    level: 'info',
    message: `Connected to ${PROVIDER_DISPLAY_NAMES[provider]} at ${apiUrl} as ${user}`,
    oauthClientId: clientId,
    oauthTokenId: tokenId,
  });
  deps.logger.info({ by: principalLabel(p), oauthClient: clientId, oauthToken: tokenId, organization: org.id }, 'OAuth client created');
  return client;
}

/** HCP does not change a client's provider or URLs: a changed value is refused, the same one accepted. */
function checkUnchanged(name: 'service-provider' | 'api-url' | 'http-url', given: string | undefined, current: string): void {
  if (given === undefined) return;
  const same = name === 'service-provider' ? given === current : vcsUrlProblem(given) === null && normalizeVcsUrl(given) === current;
  if (!same) throw unprocessable(`${name} cannot be changed (it is ${quoteValue(current)}): create a new OAuth client instead`, ATTR(name));
}

export async function updateClient(deps: Deps, p: Principal, mc: ManagedClient, input: UpdateClientInput, projectIds: string[] | undefined): Promise<OAuthClientRow> {
  const { client, org } = mc;
  checkUnchanged('service-provider', input['service-provider'], client.service_provider);
  checkUnchanged('api-url', input['api-url'], client.api_url);
  checkUnchanged('http-url', input['http-url'], client.http_url);
  const projects = await checkProjects(deps, org, projectIds);
  const pat = input['oauth-token-string'];
  if (pat !== undefined && (pat === null || pat.trim() === '')) {
    throw unprocessable('oauth-token-string must be a non-empty personal access token; omit it to keep the current one', ATTR('oauth-token-string'));
  }
  const existing = (await tokensOfClients(deps.db, [client.id])).get(client.id)?.[0];
  let user: string | undefined;
  if (pat) {
    user = await verifiedUser(deps, org, {
      oauthClientId: client.id,
      oauthTokenId: existing?.id ?? null,
      organizationId: org.id,
      serviceProvider: client.service_provider,
      apiUrl: client.api_url,
      httpUrl: client.http_url,
      token: pat,
    });
  }
  const now = rfc3339(deps.clock.now());
  const changes: Parameters<typeof updateOAuthClientRow>[2] = { updated_at: now };
  if (input.name !== undefined) changes.name = input.name;
  if (input.key !== undefined) changes.key = input.key;
  if (input.secret !== undefined) changes.secret_sealed = sealSecret(deps.secrets, input.secret);
  if (input['rsa-public-key'] !== undefined) changes.rsa_public_key = input['rsa-public-key'];
  if (input['organization-scoped'] !== undefined && input['organization-scoped'] !== null) changes.organization_scoped = input['organization-scoped'] ? 1 : 0;
  let tokenId = existing?.id;
  await inTransaction(deps.db, async (tx) => {
    await updateOAuthClientRow(tx, client.id, changes);
    if (projects) await replaceClientProjects(tx, client.id, projects);
    if (pat && existing) {
      // Rotation keeps the ot- id, so modules and workspaces linked to it carry on with the new token.
      await updateOAuthTokenRow(tx, existing.id, { token_sealed: sealSecret(deps.secrets, pat)!, service_provider_user: user!, updated_at: now });
    } else if (pat) {
      tokenId = newId('ot');
      await insertOAuthToken(tx, {
        id: tokenId,
        oauth_client_id: client.id,
        organization_id: org.id,
        token_sealed: sealSecret(deps.secrets, pat)!,
        ssh_key_sealed: null,
        service_provider_user: user!,
        uid: randomBase62(20),
        created_at: now,
        updated_at: now,
      });
    }
  });
  if (pat) {
    await recordVcsEvent(deps, {
      organizationId: org.id,
      level: 'info',
      message: `Personal access token ${existing ? 'rotated' : 'added'}; it belongs to ${user}`,
      oauthClientId: client.id,
      oauthTokenId: tokenId,
    });
  }
  deps.logger.info({ by: principalLabel(p), oauthClient: client.id, rotated: pat !== undefined }, 'OAuth client updated');
  return (await getOAuthClient(deps.db, client.id))!;
}

export async function deleteClient(deps: Deps, p: Principal, mc: ManagedClient): Promise<void> {
  const tokens = (await tokensOfClients(deps.db, [mc.client.id])).get(mc.client.id) ?? [];
  await deleteOAuthClientRow(deps.db, mc.client.id);
  for (const t of tokens) await runTokenDeletedHooks(deps, t.id);
  await recordVcsEvent(deps, { organizationId: mc.org.id, level: 'info', message: `OAuth client ${mc.client.id} deleted`, oauthClientId: mc.client.id, oauthTokenId: tokens[0]?.id ?? null });
  deps.logger.info({ by: principalLabel(p), oauthClient: mc.client.id }, 'OAuth client deleted');
}

export async function updateToken(deps: Deps, p: Principal, mt: ManagedToken, input: UpdateTokenInput): Promise<OAuthTokenRow> {
  const changes: Parameters<typeof updateOAuthTokenRow>[2] = { updated_at: rfc3339(deps.clock.now()) };
  if (input['ssh-key'] !== undefined) changes.ssh_key_sealed = sealSecret(deps.secrets, input['ssh-key']);
  await updateOAuthTokenRow(deps.db, mt.token.id, changes);
  deps.logger.info({ by: principalLabel(p), oauthToken: mt.token.id, sshKey: input['ssh-key'] === undefined ? 'kept' : input['ssh-key'] ? 'set' : 'removed' }, 'OAuth token updated');
  return (await getOAuthToken(deps.db, mt.token.id))!;
}

export async function deleteToken(deps: Deps, p: Principal, mt: ManagedToken): Promise<void> {
  await deleteOAuthTokenRow(deps.db, mt.token.id);
  await runTokenDeletedHooks(deps, mt.token.id);
  await recordVcsEvent(deps, { organizationId: mt.org.id, level: 'info', message: `OAuth token ${mt.token.id} deleted`, oauthClientId: mt.client.id, oauthTokenId: mt.token.id });
  deps.logger.info({ by: principalLabel(p), oauthToken: mt.token.id }, 'OAuth token deleted');
}

/** POST /oauth-clients/:id/relationships/projects: adds projects of the client's organization (422 for others). */
export async function attachProjects(deps: Deps, p: Principal, mc: ManagedClient, ids: string[]): Promise<void> {
  const projects = (await checkProjects(deps, mc.org, ids))!;
  await addClientProjects(deps.db, mc.client.id, projects);
  deps.logger.info({ by: principalLabel(p), oauthClient: mc.client.id, projects }, 'OAuth client projects added');
}

/** DELETE /oauth-clients/:id/relationships/projects: removes them (422 for projects not in the organization). */
export async function detachProjects(deps: Deps, p: Principal, mc: ManagedClient, ids: string[]): Promise<void> {
  const projects = (await checkProjects(deps, mc.org, ids))!;
  await removeClientProjects(deps.db, mc.client.id, projects);
  deps.logger.info({ by: principalLabel(p), oauthClient: mc.client.id, projects }, 'OAuth client projects removed');
}
