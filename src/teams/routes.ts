import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readIdentifiers, readResource } from '../http/body.js';
import { jsonApi, type ResourceObject } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { serializeToken, serializeUser } from '../identity/serialize.js';
import { getUserById } from '../identity/store.js';
import type { OrganizationRow } from '../organizations/access.js';
import { serializeMembership } from '../organizations/memberships.js';
import { getMembershipView } from '../organizations/store.js';
import { includeSet, listParam, optionalParam } from '../organizations/params.js';
import { readTokenOptions } from '../organizations/tokens.js';
import { serializeTeam, type TeamRow } from './serialize.js';
import {
  addTeamMembers,
  createTeam,
  createTeamSchema,
  createTeamToken,
  deleteTeam,
  deleteTeamToken,
  organizationForTeams,
  removeTeamMembers,
  teamForManagement,
  teamForTokens,
  teamToken,
  updateTeam,
  updateTeamSchema,
  visibleTeam,
  visibleTeams,
  type VisibleTeam,
} from './service.js';
import { teamMembers } from './store.js';

/** Teams, their members (both relationship forms) and the team token. */
export function teamRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  /** Renders teams with their members and, on request, the included users or memberships. */
  async function render(c: Context, teams: TeamRow[], org: OrganizationRow, v: VisibleTeam['access']) {
    const members = await teamMembers(deps.db, teams.map((t) => t.id));
    const data = teams.map((t) => serializeTeam(t, org.name, members.get(t.id) ?? [], v));
    const include = includeSet(c);
    const included: ResourceObject[] = [];
    const all = [...members.values()].flat();
    if (include.has('users')) {
      for (const userId of new Set(all.map((m) => m.userId))) {
        const u = await getUserById(deps.db, userId);
        if (u) included.push(serializeUser(u, { showEmail: false }));
      }
    }
    if (include.has('organization-memberships')) {
      for (const id of new Set(all.map((m) => m.membershipId))) {
        const view = await getMembershipView(deps.db, id);
        if (view) included.push(serializeMembership(view));
      }
    }
    return { data, included };
  }

  app.get('/organizations/:name/teams', async (c) => {
    const page = parsePage(c);
    const filter = { q: optionalParam(c, 'q'), names: listParam(c, 'filter[names]') };
    const { org, access, rows, total } = await visibleTeams(deps, requirePrincipal(c), c.req.param('name'), filter, { limit: page.size, offset: page.offset });
    const { data, included } = await render(c, rows, org, access);
    return jsonApi(c, { data, included, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.post('/organizations/:name/teams', async (c) => {
    const p = requirePrincipal(c);
    const target = await organizationForTeams(deps, p, c.req.param('name'));
    const { attributes } = await readResource(c, 'teams', createTeamSchema);
    const team = await createTeam(deps, p, target, attributes);
    return jsonApi(c, { data: serializeTeam(team, target.org.name, [], target.access) }, 201);
  });

  app.get('/teams/:id', async (c) => {
    const { team, org, access } = await visibleTeam(deps, requirePrincipal(c), c.req.param('id'));
    const { data, included } = await render(c, [team], org, access);
    return jsonApi(c, { data: data[0]!, included });
  });

  app.patch('/teams/:id', async (c) => {
    const p = requirePrincipal(c);
    const vt = await teamForManagement(deps, p, c.req.param('id'));
    const { attributes } = await readResource(c, 'teams', updateTeamSchema);
    const updated = await updateTeam(deps, p, vt, attributes);
    const { data } = await render(c, [updated], vt.org, vt.access);
    return jsonApi(c, { data: data[0]! });
  });

  app.delete('/teams/:id', async (c) => {
    const p = requirePrincipal(c);
    await deleteTeam(deps, p, await teamForManagement(deps, p, c.req.param('id')));
    return c.body(null, 204);
  });

  // ---- team membership: 204 and no body, as go-tfe expects ----

  for (const kind of ['users', 'organization-memberships'] as const) {
    const path = `/teams/:id/relationships/${kind}`;
    const change = (op: typeof addTeamMembers) => async (c: Context<AppEnv>) => {
      const p = requirePrincipal(c);
      const vt = await teamForManagement(deps, p, c.req.param('id')!);
      const ids = await readIdentifiers(c, kind);
      await op(deps, p, vt, kind, ids);
      return c.body(null, 204);
    };
    app.post(path, change(addTeamMembers));
    app.delete(path, change(removeTeamMembers));
  }

  // ---- the team token (legacy endpoint: one per team) ----

  app.get('/teams/:id/authentication-token', async (c) => {
    const p = requirePrincipal(c);
    const row = await teamToken(deps, p, await teamForTokens(deps, p, c.req.param('id')));
    return jsonApi(c, { data: serializeToken(row) });
  });

  app.post('/teams/:id/authentication-token', async (c) => {
    const p = requirePrincipal(c);
    const vt = await teamForTokens(deps, p, c.req.param('id'));
    const opts = await readTokenOptions(c, deps.clock.now());
    const { row, token } = await createTeamToken(deps, p, vt, opts);
    return jsonApi(c, { data: serializeToken(row, token) }, 201);
  });

  app.delete('/teams/:id/authentication-token', async (c) => {
    const p = requirePrincipal(c);
    await deleteTeamToken(deps, p, await teamForTokens(deps, p, c.req.param('id')));
    return c.body(null, 204);
  });

  return app;
}
