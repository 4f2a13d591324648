import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readIdentifiers, readResource } from '../http/body.js';
import { notFound } from '../http/errors.js';
import { jsonApi, type ResourceObject } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { serializeToken, serializeUser } from '../identity/serialize.js';
import { getUserById } from '../identity/users.js';
import { canManageTeams, principalTeamIds, type OrganizationRow } from '../organizations/access.js';
import { getMembershipView, serializeMembership } from '../organizations/memberships.js';
import { includeSet, listParam, optionalParam } from '../organizations/params.js';
import { visibleOrganization } from '../organizations/service.js';
import { findOwnedToken, readTokenOptions, replaceToken } from '../organizations/tokens.js';
import { readTeamSettings, serializeTeam, type TeamRow } from './serialize.js';
import {
  addTeamMembers,
  createTeam,
  createTeamSchema,
  deleteTeam,
  removeTeamMembers,
  updateTeam,
  updateTeamSchema,
  visibleTeam,
  type VisibleTeam,
} from './service.js';
import { listTeams, teamMembers } from './store.js';

const managersOnly = () => notFound('only the owners of an organization (or its organization token) may manage its teams');

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
    const p = requirePrincipal(c);
    const { org, access } = await visibleOrganization(deps, p, c.req.param('name'));
    const page = parsePage(c);
    const { rows, total } = await listTeams(
      deps.db,
      {
        organizationId: org.id,
        visibleSecretIds: canManageTeams(access) ? undefined : await principalTeamIds(deps.db, p, org.id),
        q: optionalParam(c, 'q'),
        names: listParam(c, 'filter[names]'),
      },
      { limit: page.size, offset: page.offset },
    );
    const { data, included } = await render(c, rows, org, access);
    return jsonApi(c, { data, included, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.post('/organizations/:name/teams', async (c) => {
    const p = requirePrincipal(c);
    const { org, access } = await visibleOrganization(deps, p, c.req.param('name'));
    if (!canManageTeams(access)) throw managersOnly();
    const { attributes } = await readResource(c, 'teams', createTeamSchema);
    const team = await createTeam(deps, p, org, attributes);
    return jsonApi(c, { data: serializeTeam(team, org.name, [], access) }, 201);
  });

  app.get('/teams/:id', async (c) => {
    const { team, org, access } = await visibleTeam(deps, requirePrincipal(c), c.req.param('id'));
    const { data, included } = await render(c, [team], org, access);
    return jsonApi(c, { data: data[0]!, included });
  });

  app.patch('/teams/:id', async (c) => {
    const p = requirePrincipal(c);
    const { team, org, access } = await visibleTeam(deps, p, c.req.param('id'));
    if (!canManageTeams(access)) throw managersOnly();
    const { attributes } = await readResource(c, 'teams', updateTeamSchema);
    const updated = await updateTeam(deps, p, team, attributes);
    const { data } = await render(c, [updated], org, access);
    return jsonApi(c, { data: data[0]! });
  });

  app.delete('/teams/:id', async (c) => {
    const p = requirePrincipal(c);
    const { team, access } = await visibleTeam(deps, p, c.req.param('id'));
    if (!canManageTeams(access)) throw managersOnly();
    await deleteTeam(deps, p, team);
    return c.body(null, 204);
  });

  // ---- team membership: 204 and no body, as go-tfe expects ----

  for (const kind of ['users', 'organization-memberships'] as const) {
    const path = `/teams/:id/relationships/${kind}`;
    const change = (op: typeof addTeamMembers) => async (c: Context<AppEnv>) => {
      const p = requirePrincipal(c);
      const { team, access } = await visibleTeam(deps, p, c.req.param('id')!);
      if (!canManageTeams(access)) throw managersOnly();
      const ids = await readIdentifiers(c, kind);
      await op(deps, p, team, kind, ids);
      return c.body(null, 204);
    };
    app.post(path, change(addTeamMembers));
    app.delete(path, change(removeTeamMembers));
  }

  // ---- the team token (legacy endpoint: one per team) ----

  /** Owners may; so may the team's own members when the team allows member token management. */
  async function tokenTeam(c: Context<AppEnv>): Promise<{ p: Principal; team: TeamRow }> {
    const p = requirePrincipal(c);
    const { team, org, access } = await visibleTeam(deps, p, c.req.param('id')!);
    const memberMay =
      p.kind === 'user' && readTeamSettings(team).allowMemberTokenManagement && (await principalTeamIds(deps.db, p, org.id)).has(team.id);
    if (!access.owner && !memberMay) throw notFound('only the owners of an organization may manage its team tokens');
    return { p, team };
  }

  app.get('/teams/:id/authentication-token', async (c) => {
    const { team } = await tokenTeam(c);
    const row = await findOwnedToken(deps, { kind: 'team', teamId: team.id });
    if (!row) throw notFound(`team "${team.id}" has no team token`);
    return jsonApi(c, { data: serializeToken(row) });
  });

  app.post('/teams/:id/authentication-token', async (c) => {
    const { p, team } = await tokenTeam(c);
    const opts = await readTokenOptions(c, deps.clock.now());
    const { row, token } = await replaceToken(deps, p, { kind: 'team', teamId: team.id }, opts);
    deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, token: row.id }, 'team token created');
    return jsonApi(c, { data: serializeToken(row, token) }, 201);
  });

  app.delete('/teams/:id/authentication-token', async (c) => {
    const { p, team } = await tokenTeam(c);
    const row = await findOwnedToken(deps, { kind: 'team', teamId: team.id });
    if (!row) throw notFound(`team "${team.id}" has no team token`);
    await deps.db.deleteFrom('tokens').where('id', '=', row.id).execute();
    deps.logger.info({ actor: principalLabel(p), organization: team.organization_id, team: team.id, token: row.id }, 'team token deleted');
    return c.body(null, 204);
  });

  return app;
}
