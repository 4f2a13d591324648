import type { Hono } from 'hono';
import { isRegistryPath, isWebPath } from '../../src/http/surface.js';

/** A route the app registers, as Hono lists it. */
export interface RouteInfo {
  method: string;
  path: string;
  params: string[];
  /** "METHOD /path", the key used in the tables below. */
  key: string;
  /**
   * api: /api/… (a bearer token decides who may act); registry: the module registry protocol;
   * capability: outside both, where the URL itself is the credential (uploads, signed
   * downloads); ops: probes and metrics; web: the UI's pages, signed in by a session cookie
   * (which no generated request carries) and answering errors as HTML.
   */
  surface: 'api' | 'registry' | 'capability' | 'ops' | 'web';
}

export const READ_METHODS = new Set(['GET', 'HEAD']);

/** Which error format a path answers in: the registry protocol's ({"errors":["…"]}) or JSON:API's. */
export const isRegistrySurface = isRegistryPath;

/**
 * Every route of the app, from its own route table: a route added later is fuzzed without
 * anyone listing it. Middleware (registered for "*" patterns) is not a route.
 */
export function registeredRoutes(app: Hono<any>): RouteInfo[] {
  const seen = new Map<string, RouteInfo>();
  for (const r of app.routes) {
    if (r.path.endsWith('*')) continue;
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) continue;
    const params = r.path
      .split('/')
      .filter((s) => s.startsWith(':'))
      .map((s) => s.slice(1));
    const surface = isRegistrySurface(r.path)
      ? 'registry'
      : isWebPath(r.path)
        ? 'web'
      : r.path.startsWith('/api/')
        ? 'api'
        : params.length > 0
          ? 'capability'
          : 'ops';
    seen.set(key, { method: r.method, path: r.path, params, key, surface });
  }
  return [...seen.values()];
}

/**
 * Which pool of real values a path parameter draws from: module coordinates share one pool
 * wherever they appear (":namespace" or go-tfe's ":organization" before ":name"); every other
 * parameter is named by the static segment before it ("teams/:id" → "teams.id"), so the ids of
 * one resource kind are not thrown at another's parameter (they still are, as unknown values,
 * through the hostile pool). A parameter with no pool gets unknown values only.
 */
export function valueKind(routePath: string, param: string): string {
  if (/\/:(namespace|organization)\/:name(\/|$)/.test(routePath) && ['namespace', 'organization', 'name', 'provider', 'version'].includes(param)) {
    return `module.${param === 'organization' ? 'namespace' : param}`;
  }
  if (param === 'organization') return 'organizations.org';
  const segs = routePath.split('/');
  const i = segs.indexOf(`:${param}`);
  for (let j = i - 1; j >= 0; j--) if (!segs[j]!.startsWith(':') && segs[j] !== '') return `${segs[j]}.${param}`;
  return param;
}

/**
 * Reads another tenant's principal may make: user profiles are visible to every authenticated
 * caller (e-mail addresses only to the user and site admins). Every other /api read of a path
 * naming the other tenant's resources must be 404.
 */
export const READABLE_ACROSS_TENANTS = new Set(['GET /api/v2/users/:user_id']);

/**
 * Mutations that must refuse a body that is invalid as a document (not JSON, not an object,
 * "data" of the wrong shape or type, empty, or sent as the wrong media type) even from a
 * principal who may act: for these the generators send such bodies with real resources and
 * authorized principals. A route missing here is still fuzzed by every other class
 * (unauthenticated, other tenants, unknown resources). The token endpoints (which accept an
 * empty body) and lock (which ignores a bad one) are deliberately absent.
 */
export const BODY_VALIDATING_ROUTES = new Set([
  'POST /api/v2/admin/users',
  'POST /api/v2/users/:user_id/authentication-tokens',
  'POST /api/v2/organizations',
  'PATCH /api/v2/organizations/:name',
  'POST /api/v2/organizations/:name/agent-pools',
  'PATCH /api/v2/admin/organizations/:name/relationships/module-consumers',
  'POST /api/v2/organizations/:name/relationships/data-retention-policy',
  'PATCH /api/v2/organizations/:name/relationships/data-retention-policy',
  'POST /api/v2/organizations/:name/organization-memberships',
  'POST /api/v2/organizations/:name/teams',
  'PATCH /api/v2/teams/:id',
  'POST /api/v2/teams/:id/relationships/users',
  'DELETE /api/v2/teams/:id/relationships/users',
  'POST /api/v2/teams/:id/relationships/organization-memberships',
  'DELETE /api/v2/teams/:id/relationships/organization-memberships',
  'POST /api/v2/organizations/:org/registry-modules',
  'POST /api/v2/organizations/:org/registry-modules/private/:namespace/:name/:provider/versions',
  'POST /api/v2/registry-modules/:organization/:name/:provider/versions',
  'PATCH /api/v2/organizations/:org/registry-modules/private/:namespace/:name/:provider',
  'POST /api/v2/organizations/:org/workspaces',
  'PATCH /api/v2/organizations/:org/workspaces/:name',
  'PATCH /api/v2/workspaces/:workspace_id',
  'POST /api/v2/workspaces/:workspace_id/state-versions',
  'POST /api/v2/workspaces/:workspace_id/relationships/tags',
  'DELETE /api/v2/workspaces/:workspace_id/relationships/tags',
  'PATCH /api/v2/workspaces/:workspace_id/tag-bindings',
  'POST /api/v2/tags/:tag_id/relationships/workspaces',
  'DELETE /api/v2/organizations/:org/tags',
  'POST /api/v2/organizations/:org/projects',
  'PATCH /api/v2/projects/:project_id',
  'PATCH /api/v2/projects/:project_id/tag-bindings',
  'POST /api/v2/organizations/:org/tasks',
  'POST /api/v2/workspaces/:workspace_id/tasks',
  'POST /api/v2/workspaces/:workspace_id/configuration-versions',
  'POST /api/v2/runs',
  'POST /api/v2/runs/:id/actions/complete-apply',
]);

/**
 * Effects the documentation gives some requests, which "nothing changed" allows for exactly
 * those requests and tables. They are behaviour, not defects:
 * - a GET of a version's download endpoint counts a download (README: download counts), at
 *   either mount of the protocol;
 * - a refused PUT to a module upload URL marks the version "errored" with the reason, and one to
 *   a state upload URL removes the pending state version (README, publishing and state).
 */
export const DOCUMENTED_EFFECTS: { route: string; method: string; when: (status: number) => boolean; tables: string[] }[] = [
  { route: 'GET /v1/modules/:namespace/:name/:provider/:version/download', method: 'GET', when: (s) => s === 204, tables: ['registry_module_downloads'] },
  { route: 'GET /api/registry/v1/modules/:namespace/:name/:provider/:version/download', method: 'GET', when: (s) => s === 204, tables: ['registry_module_downloads'] },
  { route: 'PUT /uploads/modules/:token', method: 'PUT', when: (s) => s >= 400 && s < 500, tables: ['registry_module_versions'] },
  { route: 'PUT /uploads/state/:token', method: 'PUT', when: (s) => s >= 400 && s < 500, tables: ['state_versions'] },
];
