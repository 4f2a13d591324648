import { Hono } from 'hono';
import type { AppEnv } from '../http/auth.js';

/** Service discovery: Terraform and OpenTofu read this first, over HTTPS, as exactly application/json. */
export const DISCOVERY = Object.freeze({
  'modules.v1': '/v1/modules/',
  'tfe.v2': '/api/v2/',
  'tfe.v2.1': '/api/v2/',
  'tfe.v2.2': '/api/v2/',
});

const BODY = JSON.stringify(DISCOVERY);

export function discoveryRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/.well-known/terraform.json', (c) => c.body(BODY, 200, { 'Content-Type': 'application/json' }));
  return app;
}
