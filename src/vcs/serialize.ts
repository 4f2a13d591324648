import type { ResourceObject } from '../http/jsonapi.js';
import type { OrganizationRow } from '../organizations/access.js';
import { PROVIDER_DISPLAY_NAMES } from './connection.js';
import type { OAuthClientRow, OAuthTokenRow, VcsEventRow } from './store.js';

const ref = (type: string, id: string) => ({ type, id });

/** HCP's oauth-clients shape. secret, oauth-token-string and private-key are write-only: never here. */
export function serializeClient(client: OAuthClientRow, org: OrganizationRow, tokens: OAuthTokenRow[], projectIds: string[]): ResourceObject {
  return {
    id: client.id,
    type: 'oauth-clients',
    attributes: {
      'created-at': client.created_at,
      name: client.name,
      'service-provider': client.service_provider,
      'service-provider-display-name': PROVIDER_DISPLAY_NAMES[client.service_provider],
      'http-url': client.http_url,
      'api-url': client.api_url,
      key: client.key,
      'rsa-public-key': client.rsa_public_key,
      // Only the OAuth-app flow has these; PAT clients (the only kind Terrace makes) do not.
      'callback-url': null,
      'connect-path': null,
      'organization-scoped': client.organization_scoped === 1,
    },
    relationships: {
      organization: { data: ref('organizations', org.name) },
      'oauth-tokens': { data: tokens.map((t) => ref('oauth-tokens', t.id)), links: { related: `/api/v2/oauth-clients/${client.id}/oauth-tokens` } },
      projects: { data: projectIds.map((id) => ref('projects', id)) },
      'agent-pool': { data: null },
    },
    links: { self: `/api/v2/oauth-clients/${client.id}` },
  };
}

/** HCP's oauth-tokens shape. The token and ssh-key are write-only: only has-ssh-key says one is set. */
export function serializeToken(token: OAuthTokenRow): ResourceObject {
  return {
    id: token.id,
    type: 'oauth-tokens',
    attributes: {
      uid: token.uid,
      'created-at': token.created_at,
      'has-ssh-key': token.ssh_key_sealed !== null,
      'service-provider-user': token.service_provider_user,
    },
    relationships: {
      'oauth-client': { data: ref('oauth-clients', token.oauth_client_id), links: { related: `/api/v2/oauth-clients/${token.oauth_client_id}` } },
    },
    links: { self: `/api/v2/oauth-tokens/${token.id}` },
  };
}

/** The vcs-events shape of contract.md §8; organization-id is the organization's external id. */
export function serializeEvent(e: VcsEventRow): ResourceObject {
  return {
    id: e.id,
    type: 'vcs-events',
    attributes: {
      'created-at': e.created_at,
      level: e.level,
      message: e.message,
      'organization-id': e.organization_id,
      'suggested-action': e.suggested_action,
    },
    relationships: {
      'oauth-client': e.oauth_client_id
        ? { data: ref('oauth-clients', e.oauth_client_id), links: { related: `/api/v2/oauth-clients/${e.oauth_client_id}` } }
        : { data: null },
      'oauth-token': e.oauth_token_id
        ? { data: ref('oauth-tokens', e.oauth_token_id), links: { related: `/api/v2/oauth-tokens/${e.oauth_token_id}` } }
        : { data: null },
    },
  };
}

/** What include=oauth_client carries on vcs-events: only name and service-provider. */
export function serializeEventClient(c: { id: string; name: string | null; service_provider: string }): ResourceObject {
  return { id: c.id, type: 'oauth-clients', attributes: { name: c.name, 'service-provider': c.service_provider } };
}
