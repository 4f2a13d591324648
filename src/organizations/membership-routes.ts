import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readResource } from '../http/body.js';
import { badRequest, quoteValue, unprocessable } from '../http/errors.js';
import { jsonApi, type ResourceObject } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { serializeUser } from '../identity/serialize.js';
import {
  acceptInvitation,
  inviteUser,
  organizationForMemberships,
  organizationMemberships,
  ownMemberships,
  removeMembership,
  serializeMembership,
  visibleMembership,
  type MembershipFilter,
  type MembershipView,
} from './memberships.js';
import { includeSet, listParam, optionalParam } from './params.js';

const inviteSchema = z.object({
  email: z
    .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
    .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { error: 'must be an email address' }),
});

function statusFilter(c: Context): MembershipFilter['status'] {
  const s = optionalParam(c, 'filter[status]');
  if (s === undefined) return undefined;
  if (s !== 'invited' && s !== 'active') throw badRequest(`filter[status] must be "invited" or "active", got ${quoteValue(s)}`, { parameter: 'filter[status]' });
  return s;
}

/** relationships.teams.data of an invitation: [{type:"teams",id}], optional. */
function teamIdsFrom(rel: Record<string, unknown>): string[] {
  const r = rel.teams;
  if (r === undefined) return [];
  const data = (r as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw unprocessable('relationships.teams.data must be an array of {"type":"teams","id":"team-…"}', '/data/relationships/teams/data');
  return data.map((item: unknown, i) => {
    const t = item as { type?: unknown; id?: unknown } | null;
    if (typeof t !== 'object' || t === null || t.type !== 'teams') {
      throw unprocessable(`relationships.teams.data[${i}].type must be "teams"`, `/data/relationships/teams/data/${i}/type`);
    }
    if (typeof t.id !== 'string' || t.id === '') throw unprocessable(`relationships.teams.data[${i}].id must be a team id`, `/data/relationships/teams/data/${i}/id`);
    return t.id;
  });
}

/**
 * Organization memberships. Terrace sends no email: an invited user finds the invitation with
 * GET /organization-memberships and accepts it with POST /organization-memberships/:id/actions/accept.
 */
export function membershipRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  const render = (c: Context, views: MembershipView[], include: Set<string>, extra: object) => {
    const included: ResourceObject[] = include.has('user') ? views.map((v) => serializeUser(v.user, { showEmail: false })) : [];
    return jsonApi(c, { data: views.map(serializeMembership), included, ...extra });
  };

  app.post('/organizations/:name/organization-memberships', async (c) => {
    const p = requirePrincipal(c);
    const target = await organizationForMemberships(deps, p, c.req.param('name'));
    const { attributes, relationships } = await readResource(c, 'organization-memberships', inviteSchema);
    const view = await inviteUser(deps, p, target, attributes.email, teamIdsFrom(relationships));
    return jsonApi(c, { data: serializeMembership(view) }, 201);
  });

  app.get('/organizations/:name/organization-memberships', async (c) => {
    const p = requirePrincipal(c);
    const target = await organizationForMemberships(deps, p, c.req.param('name'));
    const page = parsePage(c);
    const filter = { status: statusFilter(c), emails: listParam(c, 'filter[email]'), q: optionalParam(c, 'q') };
    const { views, total } = await organizationMemberships(deps, p, target, filter, { limit: page.size, offset: page.offset });
    return render(c, views, includeSet(c), pageLinksAndMeta(c, deps.config.publicUrl, page, total));
  });

  /** The caller's own memberships, invitations included: how an invited user finds the id to accept. */
  app.get('/organization-memberships', async (c) => {
    const page = parsePage(c);
    const filter = { status: statusFilter(c), q: optionalParam(c, 'q') };
    const { views, total } = await ownMemberships(deps, requirePrincipal(c), filter, { limit: page.size, offset: page.offset });
    return render(c, views, includeSet(c), pageLinksAndMeta(c, deps.config.publicUrl, page, total));
  });

  app.get('/organization-memberships/:id', async (c) => {
    const view = await visibleMembership(deps, requirePrincipal(c), c.req.param('id'));
    const included = includeSet(c).has('user') ? [serializeUser(view.user, { showEmail: false })] : [];
    return jsonApi(c, { data: serializeMembership(view), included });
  });

  app.delete('/organization-memberships/:id', async (c) => {
    await removeMembership(deps, requirePrincipal(c), c.req.param('id'));
    return c.body(null, 204);
  });

  app.post('/organization-memberships/:id/actions/accept', async (c) => {
    const view = await acceptInvitation(deps, requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: serializeMembership(view) });
  });

  return app;
}
