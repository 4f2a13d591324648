import { Hono } from 'hono';
import type { AppEnv } from '../http/auth.js';

/** terraform login's OAuth client: Terrace's web UI is the authorization server (src/web/oauth.ts). */
export const LOGIN_CLIENT_ID = 'terraform-cli';
/** The loopback ports Terraform may listen on for the redirect (an inclusive range). */
export const LOGIN_PORTS = [10000, 10010] as const;

/** Service discovery: Terraform and OpenTofu read this first, over HTTPS, as exactly application/json. */
export const DISCOVERY = Object.freeze({
  'login.v1': {
    client: LOGIN_CLIENT_ID,
    grant_types: ['authz_code'],
    authz: '/app/oauth/authorize',
    token: '/app/oauth/token',
    ports: [...LOGIN_PORTS],
  },
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
