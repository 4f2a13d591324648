import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { jsonApi } from '../http/jsonapi.js';
import { serializeEncryptionStatus } from './serialize.js';
import { encryptionStatus } from './service.js';

export function encryptionRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/admin/encryption', async (c) => {
    const status = await encryptionStatus(deps, requirePrincipal(c));
    return jsonApi(c, { data: serializeEncryptionStatus(status) });
  });

  return app;
}
