import { Hono } from 'hono';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readResource } from '../http/body.js';
import { notFound } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { isSiteAdmin } from './principal.js';
import { serializeToken, serializeUser } from './serialize.js';
import { createUser, createUserToken, MAX_TOKEN_DESCRIPTION_CHARS, deleteUserToken, ownedUserToken, requireSiteAdmin, userForTokens, userTokens } from './service.js';
import { findUser } from './store.js';

export const USERNAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9])?$/;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const createUserSchema = z.object({
  username: z.string().regex(USERNAME_RE, 'must be 1-64 letters, digits, "-", "_" or ".", starting and ending with a letter or digit'),
  email: z.string().max(254).regex(EMAIL_RE, 'must be an email address'),
  'is-site-admin': z.boolean().optional(),
  'is-admin': z.boolean().optional(),
});

const createTokenSchema = z.object({
  description: z.string().max(MAX_TOKEN_DESCRIPTION_CHARS, `must be at most ${MAX_TOKEN_DESCRIPTION_CHARS} characters`).nullable().optional(),
  'expired-at': z.iso.datetime({ offset: true, message: 'must be an RFC 3339 time' }).nullable().optional(),
});

export function identityRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/account/details', (c) => {
    const p = requirePrincipal(c);
    if (p.kind !== 'user') throw notFound('account details exist only for user tokens; this is a team or organization token');
    return jsonApi(c, { data: serializeUser(p.user, { showEmail: true }) });
  });

  app.post('/admin/users', async (c) => {
    const p = requirePrincipal(c);
    requireSiteAdmin(p);
    const { attributes: a } = await readResource(c, 'users', createUserSchema);
    const user = await createUser(deps, p, { username: a.username, email: a.email, siteAdmin: a['is-site-admin'] ?? a['is-admin'] ?? false });
    return jsonApi(c, { data: serializeUser(user, { showEmail: true }) }, 201);
  });

  app.get('/users/:user_id', async (c) => {
    const p = requirePrincipal(c);
    const user = await findUser(deps.db, c.req.param('user_id'));
    const self = p.kind === 'user' && user?.id === p.user.id;
    if (!user) throw notFound();
    return jsonApi(c, { data: serializeUser(user, { showEmail: self || isSiteAdmin(p) }) });
  });

  app.post('/users/:user_id/authentication-tokens', async (c) => {
    const p = requirePrincipal(c);
    const user = await userForTokens(deps, p, c.req.param('user_id'));
    const { attributes: a } = await readResource(c, 'authentication-tokens', createTokenSchema);
    const { row, token } = await createUserToken(deps, p, user.id, { description: a.description ?? null, expiredAt: a['expired-at'] ?? null });
    return jsonApi(c, { data: serializeToken(row, token) }, 201);
  });

  app.get('/users/:user_id/authentication-tokens', async (c) => {
    const page = parsePage(c);
    const { rows, total } = await userTokens(deps, requirePrincipal(c), c.req.param('user_id'), { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map((r) => serializeToken(r)), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.get('/authentication-tokens/:id', async (c) => {
    const row = await ownedUserToken(deps, requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: serializeToken(row) });
  });

  app.delete('/authentication-tokens/:id', async (c) => {
    await deleteUserToken(deps, requirePrincipal(c), c.req.param('id'));
    return c.body(null, 204);
  });

  return app;
}

