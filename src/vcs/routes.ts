import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readIdentifiers, readResource } from '../http/body.js';
import { badRequest, quoteValue, unprocessable } from '../http/errors.js';
import { jsonApi, type ResourceObject } from '../http/jsonapi.js';
import { DEFAULT_PAGE_SIZE, pageLinksAndMeta, parsePage, type PageRequest } from '../http/pagination.js';
import type { OrganizationRow } from '../organizations/access.js';
import { includeSet, listParam, optionalParam } from '../organizations/params.js';
import { clientForManagement, organizationForVcs, tokenForManagement } from './access.js';
import { listEvents } from './events.js';
import { serializeClient, serializeEvent, serializeEventClient, serializeToken } from './serialize.js';
import { attachProjects, createClient, deleteClient, deleteToken, detachProjects, updateClient, updateToken } from './service.js';
import { createClientSchema, updateClientSchema, updateTokenSchema } from './settings.js';
import { listOAuthClients, listOAuthTokens, oauthClientSummaries, projectsOfClients, tokensOfClients, type OAuthClientRow } from './store.js';

/**
 * The ids in relationships.projects of a request body (go-tfe sends full nodes; only ids are
 * read), or undefined when absent. An empty array clears them.
 */
function projectIds(relationships: Record<string, unknown>): string[] | undefined {
  const rel = relationships.projects;
  if (rel === undefined) return undefined;
  const data = (rel as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw unprocessable('relationships.projects.data must be an array of {"type":"projects","id":"prj-…"}', '/data/relationships/projects/data');
  return data.map((item, i) => {
    const node = item as { type?: unknown; id?: unknown } | null;
    if (node?.type !== 'projects' || typeof node.id !== 'string' || node.id === '') {
      throw unprocessable(`relationships.projects.data[${i}] must be {"type":"projects","id":"prj-…"}`, `/data/relationships/projects/data/${i}`);
    }
    return node.id;
  });
}

/** Lists are whole without page parameters (HCP's documented behaviour) but always carry meta.pagination. */
function listPage(explicitPage: PageRequest, total: number): PageRequest {
  if (explicitPage.explicit) return explicitPage;
  const size = Math.max(total, DEFAULT_PAGE_SIZE);
  return { number: 1, size, explicit: false, offset: 0 };
}

/** HCP's OAuth clients and tokens, and the VCS event log. */
export function vcsRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function renderClients(c: Context<AppEnv>, clients: OAuthClientRow[], org: OrganizationRow) {
    const ids = clients.map((x) => x.id);
    const tokens = await tokensOfClients(deps.db, ids);
    const projects = await projectsOfClients(deps.db, ids);
    const data = clients.map((x) => serializeClient(x, org, tokens.get(x.id) ?? [], projects.get(x.id) ?? []));
    const include = includeSet(c);
    const included: ResourceObject[] = include.has('oauth_tokens') || include.has('oauth-tokens') ? [...tokens.values()].flat().map(serializeToken) : [];
    return { data, included };
  }

  app.get('/organizations/:org/oauth-clients', async (c) => {
    const { org } = await organizationForVcs(deps, requirePrincipal(c), c.req.param('org'));
    const asked = parsePage(c);
    const { rows, total } = await listOAuthClients(deps.db, org.id, asked.explicit ? { limit: asked.size, offset: asked.offset } : undefined);
    const paging = pageLinksAndMeta(c, deps.config.publicUrl, listPage(asked, total), total);
    return jsonApi(c, { ...(await renderClients(c, rows, org)), ...paging });
  });

  app.post('/organizations/:org/oauth-clients', async (c) => {
    const p = requirePrincipal(c);
    const { org } = await organizationForVcs(deps, p, c.req.param('org'));
    const { attributes, relationships } = await readResource(c, 'oauth-clients', createClientSchema);
    const client = await createClient(deps, p, org, attributes, projectIds(relationships));
    const { data, included } = await renderClients(c, [client], org);
    return jsonApi(c, { data: data[0]!, included }, 201);
  });

  app.get('/oauth-clients/:id', async (c) => {
    const { client, org } = await clientForManagement(deps, requirePrincipal(c), c.req.param('id'));
    const { data, included } = await renderClients(c, [client], org);
    return jsonApi(c, { data: data[0]!, included });
  });

  app.patch('/oauth-clients/:id', async (c) => {
    const p = requirePrincipal(c);
    const mc = await clientForManagement(deps, p, c.req.param('id'));
    const { attributes, relationships } = await readResource(c, 'oauth-clients', updateClientSchema);
    const client = await updateClient(deps, p, mc, attributes, projectIds(relationships));
    const { data, included } = await renderClients(c, [client], mc.org);
    return jsonApi(c, { data: data[0]!, included });
  });

  app.delete('/oauth-clients/:id', async (c) => {
    const p = requirePrincipal(c);
    await deleteClient(deps, p, await clientForManagement(deps, p, c.req.param('id')));
    return c.body(null, 204);
  });

  app.post('/oauth-clients/:id/relationships/projects', async (c) => {
    const p = requirePrincipal(c);
    const mc = await clientForManagement(deps, p, c.req.param('id'));
    await attachProjects(deps, p, mc, await readIdentifiers(c, 'projects'));
    return c.body(null, 204);
  });

  app.delete('/oauth-clients/:id/relationships/projects', async (c) => {
    const p = requirePrincipal(c);
    const mc = await clientForManagement(deps, p, c.req.param('id'));
    await detachProjects(deps, p, mc, await readIdentifiers(c, 'projects'));
    return c.body(null, 204);
  });

  app.get('/oauth-clients/:id/oauth-tokens', async (c) => {
    const { client } = await clientForManagement(deps, requirePrincipal(c), c.req.param('id'));
    const asked = parsePage(c);
    const all = (await tokensOfClients(deps.db, [client.id])).get(client.id) ?? [];
    const page = listPage(asked, all.length);
    const data = all.slice(page.offset, page.offset + page.size).map(serializeToken);
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, all.length) });
  });

  app.get('/organizations/:org/oauth-tokens', async (c) => {
    const { org } = await organizationForVcs(deps, requirePrincipal(c), c.req.param('org'));
    const asked = parsePage(c);
    const { rows, total } = await listOAuthTokens(deps.db, org.id, asked.explicit ? { limit: asked.size, offset: asked.offset } : undefined);
    return jsonApi(c, { data: rows.map(serializeToken), ...pageLinksAndMeta(c, deps.config.publicUrl, listPage(asked, total), total) });
  });

  app.get('/oauth-tokens/:id', async (c) => {
    const { token } = await tokenForManagement(deps, requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: serializeToken(token) });
  });

  app.patch('/oauth-tokens/:id', async (c) => {
    const p = requirePrincipal(c);
    const mt = await tokenForManagement(deps, p, c.req.param('id'));
    const { attributes } = await readResource(c, 'oauth-tokens', updateTokenSchema);
    return jsonApi(c, { data: serializeToken(await updateToken(deps, p, mt, attributes)) });
  });

  app.delete('/oauth-tokens/:id', async (c) => {
    const p = requirePrincipal(c);
    await deleteToken(deps, p, await tokenForManagement(deps, p, c.req.param('id')));
    return c.body(null, 204);
  });

  app.get('/organizations/:org/vcs-events', async (c) => {
    const { org } = await organizationForVcs(deps, requirePrincipal(c), c.req.param('org'));
    const page = parsePage(c);
    const include = includeSet(c);
    const unsupported = [...include].find((i) => i !== 'oauth_client' && i !== 'oauth-client');
    if (unsupported !== undefined) throw badRequest(`include supports only oauth_client on vcs-events, got ${quoteValue(unsupported)}`, { parameter: 'include' });
    const query = {
      from: optionalParam(c, 'filter[from]'),
      to: optionalParam(c, 'filter[to]'),
      levels: listParam(c, 'filter[levels]'),
      oauthClientIds: listParam(c, 'filter[oauth_client_external_ids]'),
    };
    const { rows, total } = await listEvents(deps, { org }, query, { limit: page.size, offset: page.offset });
    let included: ResourceObject[] = [];
    if (include.size > 0) {
      const ids = [...new Set(rows.map((r) => r.oauth_client_id).filter((id): id is string => id !== null))];
      // Only clients of this organization: an event can name no other, but the include must not be a way to look.
      included = (await oauthClientSummaries(deps.db, org.id, ids)).map(serializeEventClient);
    }
    return jsonApi(c, { data: rows.map(serializeEvent), included, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  return app;
}
