import { Hono } from 'hono';
import { z } from 'zod';
import { rfc3339 } from '../clock.js';
import { isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readResource } from '../http/body.js';
import { notFound, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { newId } from '../ids.js';
import { isSiteAdmin, principalLabel, type Principal } from './principal.js';
import { serializeToken, serializeUser } from './serialize.js';
import { insertToken } from './tokens.js';
import { findUser, type UserRow } from './users.js';

export const USERNAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9])?$/;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const createUserSchema = z.object({
  username: z.string().regex(USERNAME_RE, 'must be 1-64 letters, digits, "-", "_" or ".", starting and ending with a letter or digit'),
  email: z.string().max(254).regex(EMAIL_RE, 'must be an email address'),
  'is-site-admin': z.boolean().optional(),
  'is-admin': z.boolean().optional(),
});

const createTokenSchema = z.object({
  description: z.string().max(256, 'must be at most 256 characters').nullable().optional(),
  'expired-at': z.iso.datetime({ offset: true, message: 'must be an RFC 3339 time' }).nullable().optional(),
});

/** A user may manage their own tokens; site admins anyone's. Anyone else sees 404. */
async function visibleUser(deps: Deps, p: Principal, userId: string): Promise<UserRow> {
  const self = p.kind === 'user' && (p.user.id === userId || p.user.username.toLowerCase() === userId.toLowerCase());
  if (!self && !isSiteAdmin(p)) throw notFound();
  const user = await findUser(deps.db, userId);
  if (!user) throw notFound();
  return user;
}

export function identityRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/account/details', (c) => {
    const p = requirePrincipal(c);
    if (p.kind !== 'user') throw notFound('account details exist only for user tokens; this is a team or organization token');
    return jsonApi(c, { data: serializeUser(p.user, { showEmail: true }) });
  });

  app.post('/admin/users', async (c) => {
    const p = requirePrincipal(c);
    if (!isSiteAdmin(p)) throw notFound();
    const { attributes: a } = await readResource(c, 'users', createUserSchema);
    const now = rfc3339(deps.clock.now());
    const user: UserRow = {
      id: newId('user'),
      username: a.username,
      username_lower: a.username.toLowerCase(),
      email: a.email,
      email_lower: a.email.toLowerCase(),
      is_site_admin: (a['is-site-admin'] ?? a['is-admin'] ?? false) ? 1 : 0,
      is_service_account: 0,
      created_at: now,
    };
    try {
      await deps.db.insertInto('users').values(user).execute();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const taken = await findUser(deps.db, a.username);
      throw taken
        ? unprocessable(`username "${a.username}" is already taken`, '/data/attributes/username')
        : unprocessable(`email "${a.email}" is already in use`, '/data/attributes/email');
    }
    deps.logger.info({ actor: principalLabel(p), user: user.id, username: user.username }, 'user created');
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
    const user = await visibleUser(deps, p, c.req.param('user_id'));
    const { attributes: a } = await readResource(c, 'authentication-tokens', createTokenSchema);
    const now = deps.clock.now();
    let expiredAt: string | null = null;
    if (a['expired-at']) {
      const t = new Date(a['expired-at']);
      if (t.getTime() <= now.getTime()) throw unprocessable('expired-at must be in the future', '/data/attributes/expired-at');
      expiredAt = rfc3339(t);
    }
    const { row, token } = await insertToken(deps.db, {
      kind: 'user',
      userId: user.id,
      description: a.description ?? null,
      createdBy: p.kind === 'user' ? p.user.id : null,
      expiredAt,
      now: rfc3339(now),
    });
    deps.logger.info({ actor: principalLabel(p), token: row.id, user: user.id }, 'user token created');
    return jsonApi(c, { data: serializeToken(row, token) }, 201);
  });

  app.get('/users/:user_id/authentication-tokens', async (c) => {
    const p = requirePrincipal(c);
    const user = await visibleUser(deps, p, c.req.param('user_id'));
    const page = parsePage(c);
    const base = deps.db.selectFrom('tokens').where('kind', '=', 'user').where('user_id', '=', user.id);
    const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const rows = await base.selectAll().orderBy('created_at').orderBy('id').limit(page.size).offset(page.offset).execute();
    return jsonApi(c, { data: rows.map((r) => serializeToken(r)), ...pageLinksAndMeta(c, deps.config.publicUrl, page, Number(n)) });
  });

  async function ownedToken(p: Principal, id: string) {
    const row = await deps.db.selectFrom('tokens').selectAll().where('id', '=', id).where('kind', '=', 'user').executeTakeFirst();
    if (!row || !row.user_id) throw notFound();
    if (!(p.kind === 'user' && p.user.id === row.user_id) && !isSiteAdmin(p)) throw notFound();
    return row;
  }

  app.get('/authentication-tokens/:id', async (c) => {
    const row = await ownedToken(requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: serializeToken(row) });
  });

  app.delete('/authentication-tokens/:id', async (c) => {
    const p = requirePrincipal(c);
    const row = await ownedToken(p, c.req.param('id'));
    await deps.db.deleteFrom('tokens').where('id', '=', row.id).execute();
    deps.logger.info({ actor: principalLabel(p), token: row.id }, 'user token deleted');
    return c.body(null, 204);
  });

  return app;
}

