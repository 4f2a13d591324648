import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { isWebPath, OAUTH_TOKEN_PATH } from '../../src/http/surface.js';
import type { ManualClock } from '../../src/clock.js';
import { createUserWithToken, startTestServer } from '../helpers/server.js';
import { actorsFor, normalizedPath, reasonsFor, requestArb, type FuzzRequest, type World } from './generators.js';
import { KNOWN_DEFECTS, type Observation } from './known-defects.js';
import { rawRequest, type RawResponse } from './raw-http.js';
import { BODY_VALIDATING_ROUTES, DOCUMENTED_EFFECTS, isRegistrySurface, READABLE_ACROSS_TENANTS, READ_METHODS, registeredRoutes } from './routes.js';
import { seedTenant } from './seed.js';
import { changes, StoreWatcher, type StoreSnapshot } from './snapshot.js';

/**
 * Throws generated hostile requests at every route the app registers and asserts, for each:
 * no 5xx; every 4xx carries an error body in its surface's format (JSON:API errors on /api and
 * capability URLs, {"errors":["…"]} on the registry protocol) and does not echo huge input;
 * a mutation is refused (and, when refused for who is asking, with 401 or 404 whatever its
 * body); a read of the other tenant's resources is 404; and nothing changed in the store or the blob store. See generators.ts for why every
 * generated mutation must be refused.
 *
 * Settings: FUZZ_RUNS (runs per route, default 15; raise it for longer local runs), FUZZ_SEED
 * (fixed by default so CI is reproducible; fast-check prints the seed of a failure),
 * FUZZ_SHRINK=1 (shrink a failure to a smaller request; off by default since each step is a real
 * request), FUZZ_TRACE=1 (print every request and its answer), FUZZ_STRICT=1 (ignore
 * KNOWN_DEFECTS, to see which of them still fail).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 15);
const SEED = process.env.FUZZ_SEED === undefined ? 15_0005 : Number(process.env.FUZZ_SEED);
const STRICT = process.env.FUZZ_STRICT === '1';

// The server starts at load time: the route list the tests are declared from comes from the app.
const t = await startTestServer({ TERRACE_JOBS: 'false' });
const routes = registeredRoutes(createApp(t.running.deps));
const maxJsonBody = t.running.deps.config.maxJsonBodyBytes;

let world: World;
let watcher: StoreWatcher;
let last: StoreSnapshot | undefined;
const knownHits = new Map<string, { count: number; example: string }>();

beforeAll(async () => {
  // A token that expires, then the clock moves past it (before anything else is seeded, so the
  // upload and download URLs issued below stay valid).
  const expiring = await createUserWithToken(t, 'fuzz-expiring');
  const tok = await t.api('POST', `/api/v2/users/${expiring.id}/authentication-tokens`, {
    body: { data: { type: 'authentication-tokens', attributes: { 'expired-at': new Date(t.clock.now().getTime() + 60_000).toISOString() } } },
  });
  expect(tok.status).toBe(201);
  (t.clock as ManualClock).advance(120_000);
  const a = await seedTenant(t, 'fuzz-a');
  const b = await seedTenant(t, 'fuzz-b');
  // B may read A's modules: the read paths of sharing are fuzzed too, and B still may not change them.
  const share = await t.api('PATCH', `/api/v2/admin/organizations/${a.org}/relationships/module-consumers`, { body: { data: [{ type: 'organizations', id: b.org }] } });
  expect(share.status).toBe(204);
  const actors = actorsFor(a, b, t.adminToken, tok.json.data.attributes.token);
  // A token's first use records last_used_at; the clock does not move, so after this never again.
  for (const actor of actors) await rawRequest(t.url, 'GET', '/api/v2/ping', actor.authorization ? [['Authorization', actor.authorization]] : []);
  world = { tenants: { a, b }, actors, paramlessPaths: new Set(routes.filter((r) => r.params.length === 0).map((r) => r.path)) };
  watcher = await StoreWatcher.open(t.dataDir, t.running.deps.blobs);
}, 120_000);

afterAll(async () => {
  if (knownHits.size) {
    const lines = [...knownHits].map(([id, h]) => `  ${id}: ${h.count} request(s), e.g. ${h.example}`);
    console.log(`fuzz: known defects still present (KNOWN_DEFECTS):\n${lines.join('\n')}`);
  }
  await watcher?.close();
  await t.close();
});

describe('the route list', () => {
  it('is read from the app and holds every surface', () => {
    const keys = routes.map((r) => r.key);
    expect(routes.length).toBeGreaterThan(60);
    for (const known of [
      'GET /.well-known/terraform.json',
      'POST /api/v2/organizations',
      'PATCH /api/v2/workspaces/:workspace_id',
      'POST /api/v2/workspaces/:workspace_id/state-versions',
      'GET /v1/modules/:namespace/:name/:provider/:version/download',
      'GET /v2/modules/:namespace/:name/:provider/downloads/summary',
      'PUT /uploads/modules/:token',
      'PUT /uploads/state-json/:token',
      'GET /archives/:versionId/:capability/:file',
    ]) {
      expect(keys).toContain(known);
    }
    expect(new Set(routes.map((r) => r.surface))).toEqual(new Set(['api', 'registry', 'capability', 'ops', 'web']));
    expect(keys.some((k) => k.includes('*'))).toBe(false);
  });

  it('names only routes that exist in the tables the generators use', () => {
    const keys = new Set(routes.map((r) => r.key));
    for (const key of [...BODY_VALIDATING_ROUTES, ...READABLE_ACROSS_TENANTS, ...DOCUMENTED_EFFECTS.map((e) => e.route)]) expect(keys, key).toContain(key);
  });

  it('gives every mutation a reason to be refused', () => {
    for (const r of routes) if (!READ_METHODS.has(r.method)) expect(reasonsFor(r).length, r.key).toBeGreaterThan(0);
  });
});

describe.each(routes.map((r) => [r.key, r] as const))('%s', (_key, route) => {
  it(
    'answers hostile input with a well-formed refusal and changes nothing',
    async () => {
      await fc.assert(
        fc.asyncProperty(requestArb(route, world), async (req) => {
          const get = await check(req);
          // HEAD is GET without the body: every GET is asked both ways (Hono answers HEAD through the GET handler).
          if (req.method === 'GET') await check({ ...req, method: 'HEAD' }, get);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: process.env.FUZZ_SHRINK !== '1' },
      );
    },
    300_000,
  );
});

function describeRequest(req: FuzzRequest): string {
  const target = req.target.length > 300 ? `${req.target.slice(0, 300)}…(${req.target.length} chars)` : req.target;
  const body = req.body === undefined ? 'no body' : `${req.body.length}-byte ${req.chunked ? 'chunked ' : ''}body ${JSON.stringify(req.body.subarray(0, 120).toString('latin1'))}`;
  return `${req.method} ${target} as ${req.actor} (${req.reason}), ${body}`;
}

/**
 * The store once the download counts this process holds in memory are written: a download's
 * count reaches the table a moment after its request, and must not show as a change of the next.
 */
async function settledSnapshot(): Promise<StoreSnapshot> {
  await t.running.deps.downloads.flush();
  return watcher.take();
}

/** Checks one request; returns its answer. twin: the GET a HEAD repeats (a HEAD answer has no body to read). */
async function check(req: FuzzRequest, twin?: { status: number; text: string }): Promise<{ status: number; text: string }> {
  let before = last;
  last = undefined;
  before ??= await settledSnapshot();
  const res = await rawRequest(t.url, req.method, req.target, req.headers, req.body, req.chunked).catch((err: Error) => {
    throw new Error(`${describeRequest(req)}: no answer: ${err.message}`);
  });
  const after = await settledSnapshot();
  last = after;

  if (process.env.FUZZ_TRACE) console.log(`${describeRequest(req).slice(0, 300)} → ${res.status} ${changes(before, after).join(',')}`);
  const effects = DOCUMENTED_EFFECTS.filter((e) => e.route === req.routeKey && e.method === req.method && e.when(res.status)).flatMap((e) => e.tables);
  const changed = changes(before, after).filter((c) => !effects.includes(c));
  const text = res.body.toString('utf8');
  const problems: { failure: Observation['failure'] | 'format' | 'not-refused'; message: string }[] = [];

  if (res.status >= 500) problems.push({ failure: 'server-error', message: `answered ${res.status}: ${text.slice(0, 300)}` });
  if (!READ_METHODS.has(req.method) && res.status < 400) problems.push({ failure: 'not-refused', message: `a mutation that must be refused answered ${res.status}` });
  if (req.reason === 'unauthenticated' || req.reason === 'foreign' || req.reason === 'foreign-read') {
    const allowed = [401, 404, ...((req.body?.length ?? 0) > maxJsonBody ? [413] : [])];
    // A form post without a session may also fail its CSRF check (403), not be a form (415) or too
    // large (413), or, at Terraform's token endpoint, carry no valid code (OAuth's 400).
    if (isWebPath(normalizedPath(req.target))) allowed.push(400, 403, 413, 415);
    const explained = twin && req.method === 'HEAD' && twin.status === res.status ? twin.text : text;
    if (!allowed.includes(res.status) && !queryParameterRefusal(req, res.status, explained)) {
      problems.push({ failure: 'refusal-status', message: `refused for who is asking, so expected ${allowed.join(' or ')}, got ${res.status}: ${text.slice(0, 300)}` });
    }
  }
  if (res.status >= 400 && res.status < 500) {
    const format = errorFormatProblem(req, res, text);
    if (format) problems.push({ failure: 'format', message: format });
    if (res.body.length > 8192 + 2 * req.target.length) {
      problems.push({ failure: 'oversized-error', message: `a ${res.status} error body of ${res.body.length} bytes for a ${req.body?.length ?? 0}-byte request body` });
    }
  }
  if (changed.length) problems.push({ failure: 'changed', message: `changed ${changed.join(', ')} (status ${res.status})` });

  const unexplained = problems.filter((p) => {
    if (STRICT || p.failure === 'format' || p.failure === 'not-refused') return true;
    const o: Observation = { req, status: res.status, bodyLength: res.body.length, changed, failure: p.failure };
    const known = KNOWN_DEFECTS.find((d) => d.matches(o));
    if (!known) return true;
    const hit = knownHits.get(known.id) ?? { count: 0, example: `${describeRequest(req)} → ${res.status}` };
    hit.count++;
    knownHits.set(known.id, hit);
    return false;
  });
  if (unexplained.length) throw new Error(`${describeRequest(req)}:\n${unexplained.map((p) => `  [${p.failure}] ${p.message}`).join('\n')}`);
  return { status: res.status, text };
}

/**
 * A 400 naming a malformed query parameter (source.parameter) may come before the question of
 * who is asking: routes parse their input before the service authorizes, and the answer is the
 * same whatever the path names, so it reveals nothing. Bodies are another matter (issue 15).
 */
function queryParameterRefusal(req: FuzzRequest, status: number, text: string): boolean {
  if (status !== 400) return false;
  try {
    const parameter = JSON.parse(text)?.errors?.[0]?.source?.parameter;
    const query = req.target.includes('?') ? new URLSearchParams(req.target.slice(req.target.indexOf('?') + 1)) : new URLSearchParams();
    return typeof parameter === 'string' && query.has(parameter);
  } catch {
    return false;
  }
}

/** Terraform's token endpoint answers errors as OAuth 2.0 does: {"error":"…","error_description":"…"}. */
function oauthErrorProblem(res: RawResponse, contentType: string, text: string, method: string): string | null {
  if (contentType !== 'application/json') return `a ${res.status} from the token endpoint with Content-Type "${contentType}", expected application/json`;
  if (method === 'HEAD') return null;
  try {
    const body = JSON.parse(text);
    if (typeof body?.error === 'string' && /^[a-z_]+$/.test(body.error) && typeof body.error_description === 'string') return null;
  } catch {
    // reported below
  }
  return `a ${res.status} from the token endpoint that is not an OAuth error: ${text.slice(0, 200)}`;
}

/** The error body of a 4xx in the format of the surface the (normalized) path falls under; null if fine. */
function errorFormatProblem(req: FuzzRequest, res: RawResponse, text: string): string | null {
  const contentType = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
  const path = normalizedPath(req.target);
  if (path === OAUTH_TOKEN_PATH) return oauthErrorProblem(res, contentType, text, req.method);
  if (isWebPath(path)) {
    if (contentType !== 'text/html') return `a ${res.status} on the web surface with Content-Type "${contentType}", expected text/html: ${text.slice(0, 200)}`;
    if (req.method !== 'HEAD' && !/<h1>\d{3} [^<]+<\/h1>/.test(text)) return `a ${res.status} page without its status heading: ${text.slice(0, 200)}`;
    return null;
  }
  const registry = isRegistrySurface(normalizedPath(req.target));
  const wantType = registry ? 'application/json' : 'application/vnd.api+json';
  if (contentType !== wantType) return `a ${res.status} with Content-Type "${contentType}", expected ${wantType}: ${text.slice(0, 200)}`;
  if (req.method === 'HEAD') return null;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return `a ${res.status} whose body is not JSON: ${JSON.stringify(text.slice(0, 200))}`;
  }
  const errors = body?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return `a ${res.status} without an errors array: ${text.slice(0, 200)}`;
  if (registry) {
    if (!errors.every((e: unknown) => typeof e === 'string' && e.length > 0)) return `registry errors must be non-empty strings: ${text.slice(0, 200)}`;
    return null;
  }
  for (const e of errors) {
    if (typeof e?.status !== 'string' || typeof e?.title !== 'string' || typeof e?.detail !== 'string' || !e.title || !e.detail) {
      return `JSON:API errors need string status, title and detail: ${text.slice(0, 200)}`;
    }
  }
  if (errors[0].status !== String(res.status)) return `errors[0].status "${errors[0].status}" disagrees with the HTTP status ${res.status}`;
  return null;
}
