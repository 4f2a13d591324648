import fc from 'fast-check';
import type { Tenant } from './seed.js';
import { BODY_VALIDATING_ROUTES, READABLE_ACROSS_TENANTS, READ_METHODS, valueKind, type RouteInfo } from './routes.js';

/**
 * The generated requests, and why each one must be refused.
 *
 * "Nothing changed" is a valid expectation only for a request that must fail, so every mutation
 * (any method but GET and HEAD) is generated for one stated reason, and only in a form for which
 * that reason holds whatever else the request carries:
 * - unauthenticated: no token, a malformed Authorization header or an unknown token, on /api;
 *   on the web surface, any request (none carries a session cookie, and the sign-in form and
 *   Terraform's token endpoint refuse one without its CSRF token or authorization code);
 * - foreign: a principal of one tenant against path values naming the other tenant's resources,
 *   or a reader (a team that may read but change nothing) against its own organization's; or
 *   unknown values;
 * - unknown: at least one path segment names nothing that exists (ids, names and tokens with
 *   a marker no seeded value carries, or hostile encodings of such);
 * - bad-body: a body that is invalid as a document (BODY_VALIDATING_ROUTES) or, on a capability
 *   URL, as an upload (neither a JSON object nor gzip).
 * Dot segments ("..", "%2e") are resolved before routing, so they only appear where no resolved
 * path can become an action the caller may take: for the unauthenticated, for foreign callers
 * unless the path resolves onto a route without parameters, and in reads.
 * A well-formed mutation by a principal who may act is never generated. GET and HEAD may be
 * well-formed, by anyone: they must still change nothing (bar DOCUMENTED_EFFECTS). Reads of the
 * other tenant's resources (foreign-read) must moreover be refused, as not found.
 */
export type Reason = 'read' | 'foreign-read' | 'unauthenticated' | 'foreign' | 'unknown' | 'bad-body';

export interface Actor {
  label: string;
  authorization?: string;
  kind: 'unauthenticated' | 'tenant' | 'no-rights' | 'site-admin';
  tenant?: 'a' | 'b';
}

export interface World {
  tenants: { a: Tenant; b: Tenant };
  actors: Actor[];
  /** Paths of routes without parameters: a dot segment must not normalize a request onto one. */
  paramlessPaths: Set<string>;
}

export interface FuzzRequest {
  routeKey: string;
  reason: Reason;
  actor: string;
  method: string;
  target: string;
  headers: [string, string][];
  body?: Buffer;
  /** Sent with Transfer-Encoding: chunked instead of a Content-Length. */
  chunked: boolean;
}

export function actorsFor(a: Tenant, b: Tenant, adminToken: string, expiredToken: string): Actor[] {
  const unauth = (label: string, authorization?: string): Actor => ({ label, authorization, kind: 'unauthenticated' });
  const tenant = (t: Tenant, key: 'a' | 'b'): Actor[] => [
    { label: `${key}-owner`, authorization: `Bearer ${t.owner.token}`, kind: 'tenant', tenant: key },
    { label: `${key}-ops-team`, authorization: `Bearer ${t.opsTeamToken}`, kind: 'tenant', tenant: key },
    { label: `${key}-org-token`, authorization: `Bearer ${t.orgToken}`, kind: 'tenant', tenant: key },
  ];
  return [
    unauth('anonymous'),
    unauth('empty-authorization', ''),
    unauth('basic', 'Basic YWxpY2U6c2VjcmV0'),
    unauth('bearer-without-token', 'Bearer'),
    unauth('bearer-two-words', `Bearer ${a.owner.token} ${a.owner.token}`),
    unauth('token-scheme', `Token ${a.owner.token}`),
    unauth('unknown-token', 'Bearer nx0000000000000000000000000000.terrace.nx000000000000'),
    unauth('truncated-token', `Bearer ${a.owner.token.slice(0, -1)}`),
    unauth('huge-token', `Bearer ${'n'.repeat(8000)}`),
    unauth('expired-token', `Bearer ${expiredToken}`),
    ...tenant(a, 'a'),
    ...tenant(b, 'b'),
    { label: 'a-reader-team', authorization: `Bearer ${a.readerTeamToken}`, kind: 'no-rights', tenant: 'a' },
    { label: 'site-admin', authorization: `Bearer ${adminToken}`, kind: 'site-admin' },
  ];
}

// ---- path segments ----

const DOT_SEGMENTS = ['..', '.', '%2e%2e', '%2E', '.%2e', '%2e.'];
const enc = (s: string) => encodeURIComponent(s);

/** A raw path segment naming nothing that exists: it carries "nx", or is a value (like "-1" or "%00") no seeded resource has. */
const unknownSegment: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(fc.constantFrom('', 'ws-', 'team-', 'user-', 'org-', 'sv-', 'wsout-', 'ou-', 'at-', 'apool-', 'mod-'), fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/))
    .map(([p, s]) => `${p}nx${s}`),
  fc.integer({ min: 256, max: 4000 }).map((n) => `nx${'a'.repeat(n)}`),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).map((s) => enc(`nx${s}`)),
  fc.stringMatching(/^[a-z0-9]{0,8}$/).map((s) => `nx%00${s}`),
  fc.constantFrom('nx%2F..%2Fnx', '..%2Fnx', 'nx%2f', '%2Fnx', 'nx%5C..%5Cnx', 'nx%', 'nx%zz', 'nx%ff%fe', 'nx%C0%AE', 'nx%20', 'nx;x=1', 'nx%3Fq=1', 'nx%23x', 'nx%0d%0aX-Injected:%201'),
  fc.constantFrom('-1', '0', '99999999999999999999999', '1e309', 'NaN', 'null', 'undefined', '%00', '%20', '~', 'nx.tar.gz', 'v0.0.0-nx', '0.0.0-nx'),
);

function realSegment(t: Tenant, route: RouteInfo, param: string): string[] {
  return (t.values[valueKind(route.path, param)] ?? []).map(enc);
}

// ---- query parameters ----

const queryKey = fc.oneof(
  fc.constantFrom(
    'page[number]',
    'page[size]',
    'page%5Bnumber%5D',
    'page%5Bsize%5D',
    'offset',
    'limit',
    'q',
    'search[name]',
    'search[wildcard-name]',
    'search[tags]',
    'filter[organization][name]',
    'filter[workspace][name]',
    'filter[status]',
    'filter[names]',
    'filter[provider]',
    'filter[registry_name]',
    'include',
    'module_version',
    'verified',
    'provider',
    'namespace',
  ),
  fc.constantFrom('page[number][]', 'page[][number]', 'page[number', 'page]number[', 'filter[[name]]', 'page[number][x]', '%5B%5D', '[]', 'q[]'),
  fc.stringMatching(/^[a-z_[\]]{1,12}$/),
);

const queryValue = (a: Tenant, b: Tenant) =>
  fc.oneof(
    fc.integer({ min: 16, max: 400 }).chain((n) => fc.stringMatching(new RegExp(`^[1-9][0-9]{${n - 1}}$`))),
    fc.constantFrom('0', '-1', '-99999999999999999999', '1.5', '1e3', '0x10', ' 1', '+1', '1 ', 'abc', '', 'NaN', 'Infinity', '9007199254740993', '100', '101'),
    fc.constantFrom('outputs', 'users,organization-memberships', 'invited', 'active', 'true', 'false', 'private', 'aws', 'web', 'vpc', a.org, b.org),
    fc.string({ unit: 'grapheme', maxLength: 16 }),
    fc.integer({ min: 1000, max: 6000 }).map((n) => 'q'.repeat(n)),
    fc.constantFrom('%00', '%ff', '%', '[', ']', '*', '%2A', '..', '../..'),
  );

function encodeQueryPart(s: string): string {
  // Keys and values that already hold escapes are sent as they are; the rest is escaped, [] kept.
  return /%[0-9A-Fa-f]{2}|^%$|%[^0-9A-Fa-f]/.test(s) ? s.replace(/[^\x21-\x7e]/gu, (c) => enc(c)) : enc(s).replace(/%5B/g, '[').replace(/%5D/g, ']');
}

/** Paging parameters with out-of-range and malformed numbers, in every bracket form. */
const pagingPair = fc.tuple(
  fc.constantFrom('page[number]', 'page[size]', 'page%5Bnumber%5D', 'page%5Bsize%5D', 'offset', 'limit'),
  fc.oneof(
    // Past what SQLite's 64-bit integers hold once multiplied by a page size.
    fc.integer({ min: 20, max: 400 }).chain((n) => fc.stringMatching(new RegExp(`^[1-9][0-9]{${n - 1}}$`))),
    fc.constantFrom('0', '-1', '-99999999999999999999', '1.5', '1e3', '1e400', '0x10', ' 1', '+1', 'abc', '', '9007199254740993', '9223372036854775807', '101', '00000000000000000000001'),
  ),
);

const serializeQuery = (pairs: [string, string][]) =>
  pairs.length ? `?${pairs.map(([k, v]) => `${encodeQueryPart(k)}=${encodeQueryPart(v)}`).join('&')}` : '';

/** No query, one paging parameter alone (so no other parameter's refusal masks it), or a mix. */
const queryArb = (a: Tenant, b: Tenant) =>
  fc.oneof(
    { arbitrary: fc.constant(''), weight: 1 },
    { arbitrary: pagingPair.map((p) => serializeQuery([p])), weight: 2 },
    {
      arbitrary: fc
        .tuple(fc.array(pagingPair, { maxLength: 2 }), fc.array(fc.tuple(queryKey, queryValue(a, b)), { maxLength: 3 }))
        .map(([paging, other]) => serializeQuery([...paging, ...other])),
      weight: 2,
    },
  );

// ---- headers ----

const CONTENT_TYPES = [
  undefined,
  'application/vnd.api+json',
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/vnd.api+json; ext=bulk',
  'text/plain',
  'multipart/form-data; boundary=nx',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'application/gzip',
  ';;;',
  'json',
];

const extraHeaders = fc.subarray<[string, string]>([
  ['Range', 'bytes=0-0'],
  ['Range', 'bytes=-1'],
  ['Range', 'bytes=5-1'],
  ['Range', 'bytes=0-'],
  ['Range', 'bytes=99999999999999999999-'],
  ['Range', 'bytes=-99999999999999999999'],
  ['Range', 'bytes=0-1,2-3'],
  ['Range', 'bytes=-0'],
  ['Range', 'items=0-1'],
  ['Range', 'bytes=abc'],
  ['Accept', 'text/html'],
  ['Accept', '*/*;q=0'],
  ['Accept-Encoding', 'gzip, br'],
  ['Content-Encoding', 'gzip'],
  ['If-None-Match', '*'],
  ['If-Modified-Since', 'yesterday'],
  ['X-Forwarded-Host', 'nx.example'],
  ['X-Forwarded-Proto', 'gopher'],
  ['X-Request-Id', 'nx'.repeat(100)],
  ['X-Padding', 'p'.repeat(8000)],
]);

// ---- bodies ----

/** Every data.type a Terrace route accepts, so "wrong type" generators never produce one. */
const REAL_TYPES = new Set([
  'agent-pools',
  'authentication-tokens',
  'authentication-token',
  'organization-memberships',
  'organizations',
  'registry-module-versions',
  'registry-modules',
  'state-versions',
  'teams',
  'users',
  'workspaces',
  'data-retention-policy-delete-olders',
  'data-retention-policy-dont-deletes',
  'data-retention-policies',
  '',
]);

const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('workspace', 'Workspaces', 'WORKSPACES', ' teams', 'teams ', 'team', 'user', 'organization', 'registry-module', 'state-version', 'agent-pool', 'data-retention-policy', 'tags'),
  fc.string({ maxLength: 20 }).filter((s) => !REAL_TYPES.has(s)),
  fc.integer({ min: 64 * 1024, max: 256 * 1024 }).map((n) => 't'.repeat(n)),
  fc.constantFrom(null, 0, 1, true, false, [], {}, ['workspaces'], { type: 'workspaces' }),
);

const ATTRIBUTE_NAMES = [
  'name', 'email', 'username', 'description', 'provider', 'registry-name', 'version', 'commit-sha', 'serial', 'md5', 'lineage',
  'state', 'json-state', 'json-state-outputs', 'force', 'execution-mode', 'auto-apply', 'terraform-version', 'working-directory',
  'tag-names', 'visibility', 'organization-access', 'permissions', 'expired-at', 'is-site-admin', 'delete-older-than-n-days',
  'collaborator-auth-policy', 'default-execution-mode', 'allow-member-token-management', 'reason', 'no-code', 'organization-scoped',
];

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.integer({ min: 64 * 1024, max: 300 * 1024 }).map((n) => 'v'.repeat(n)),
  fc.constantFrom(-1, 0, 1, 1e308, -1e308, 9007199254740993, 1.5, true, false, null, '', ' ', 'remote', 'agent', 'nx-mode', 'secret', 'organization', '1.0.0', 'v1', '2000-01-01T00:00:00Z', '9999-12-31T23:59:59+99:99'),
  fc.constantFrom([], [1, 2], ['web', 'web'], {}, { nested: { deeper: [] } }, { 'manage-workspaces': 'yes' }),
);

const attributes = fc.dictionary(fc.oneof(fc.constantFrom(...ATTRIBUTE_NAMES), fc.string({ maxLength: 12 })), hostileValue, { maxKeys: 6 });

const nested = (depth: number, open: string, close: string, inner = '0') => open.repeat(depth) + inner + close.repeat(depth);

/** A JSON:API document that may well be valid: only ever sent where something else refuses it. */
const plausibleDocument = fc
  .record({
    type: fc.oneof(fc.constantFrom(...[...REAL_TYPES].filter(Boolean)), wrongType),
    id: fc.option(fc.oneof(fc.string({ maxLength: 12 }), fc.constant('ws-nx')), { nil: undefined }),
    attributes,
    relationships: fc.option(fc.dictionary(fc.constantFrom('teams', 'users', 'organization', 'workspace', 'project'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 2 }), { nil: undefined }),
  })
  .map((d) => Buffer.from(JSON.stringify({ data: d })));

/**
 * A body no JSON:API route can accept, whatever it expects: not JSON, JSON that is not an object,
 * or an object whose "data" is of the wrong shape or names no real type (a data array always
 * holds an item of a wrong type: an empty one is valid for module-consumers).
 */
const hugeString = fc.integer({ min: 64 * 1024, max: 256 * 1024 }).map((n) => 'h'.repeat(n));

const invalidDocument: fc.Arbitrary<Buffer> = fc.oneof(
  // A huge value where a message might quote it: "data.type must be …, got <it>".
  hugeString.map((type) => Buffer.from(JSON.stringify({ data: { type, attributes: { name: type } } }))),
  hugeString.map((type) => Buffer.from(JSON.stringify({ data: [{ type, id: type }] }))),
  fc.constantFrom('', ' ', '{', '{"data":', '{"data":{"type":"workspaces",}}', "{'data':{}}", '{"data":{"type":"workspaces"}}}', 'data=1&type=workspaces', '\ufeff{', 'NaN').map((s) => Buffer.from(s)),
  fc.constantFrom('null', '[]', '1', '"data"', 'true', '[{"data":{}}]', '{}', '{"data":null}', '{"data":1}', '{"data":"workspaces"}', '{"data":true}', '{"Data":{"type":"workspaces"}}').map((s) => Buffer.from(s)),
  fc.record({ type: wrongType, attributes: fc.oneof(attributes, hostileValue) }).map((d) => Buffer.from(JSON.stringify({ data: d }))),
  fc.array(fc.record({ type: wrongType, id: fc.oneof(fc.string({ maxLength: 12 }), hostileValue) }), { minLength: 1, maxLength: 3 }).map((d) => Buffer.from(JSON.stringify({ data: d }))),
  fc.integer({ min: 100, max: 100_000 }).map((n) => Buffer.from(`{"data":{"type":"nx","attributes":{"name":${nested(n, '[', ']')}}}}`)),
  fc.integer({ min: 100, max: 100_000 }).map((n) => Buffer.from(`{"data":${nested(n, '{"a":', '}')}}`)),
  fc.uint8Array({ minLength: 1, maxLength: 2048 }).map((u) => Buffer.concat([Buffer.from([0xff, 0x00]), Buffer.from(u)])),
  fc.constant(0).map(() => Buffer.from(`{"data":{"type":"nx","attributes":{"name":"${'o'.repeat(1024 * 1024 + 10)}"}}}`)),
);

/** An upload body that is neither a JSON object nor gzip: refused by every upload URL. */
const invalidUpload: fc.Arbitrary<Buffer> = fc.oneof(
  fc.constantFrom('', 'null', '[]', '[1,2]', '"state"', '42', '{', '{"version":4', 'PK\u0003\u0004', '\u001f', 'not a tarball').map((s) => Buffer.from(s)),
  fc.uint8Array({ minLength: 1, maxLength: 4096 }).map((u) => Buffer.concat([Buffer.from([0x00]), Buffer.from(u)])),
  fc.integer({ min: 100, max: 100_000 }).map((n) => Buffer.from(nested(n, '[', ']'))),
  fc.integer({ min: 64 * 1024, max: 512 * 1024 }).map((n) => Buffer.alloc(n, 0x20).fill('x', 0, 1)),
);

const anyBody = fc.oneof(
  { arbitrary: fc.constant<Buffer | undefined>(undefined), weight: 2 },
  { arbitrary: plausibleDocument, weight: 3 },
  { arbitrary: invalidDocument, weight: 2 },
  { arbitrary: invalidUpload, weight: 1 },
);

// ---- requests ----

export function reasonsFor(route: RouteInfo): Reason[] {
  if (READ_METHODS.has(route.method)) {
    // The JSON:API only: the registry protocol serves modules shared across organizations.
    const foreignRead = route.path.startsWith('/api/v2/') && route.params.length > 0 && !READABLE_ACROSS_TENANTS.has(route.key);
    return foreignRead ? ['read', 'foreign-read'] : ['read'];
  }
  const out: Reason[] = [];
  // No generated request carries a session cookie: every form post on the web surface comes from someone not signed in.
  if (route.surface === 'api' || route.surface === 'web') out.push('unauthenticated');
  if (route.surface === 'api' && route.params.length > 0) out.push('foreign');
  if (route.params.length > 0) out.push('unknown');
  if (BODY_VALIDATING_ROUTES.has(route.key) || route.surface === 'capability') out.push('bad-body');
  return out;
}

type Segment = { raw: string };

export function requestArb(route: RouteInfo, world: World): fc.Arbitrary<FuzzRequest> {
  const { a, b } = world.tenants;
  const tenants = { a, b };
  const reasons = reasonsFor(route);
  if (reasons.length === 0) throw new Error(`${route.key}: no way to generate a request that must be refused`);

  const seg = (choices: fc.Arbitrary<Segment>[]) => fc.oneof(...choices);
  const real = (t: Tenant, p: string): fc.Arbitrary<Segment>[] => {
    const v = realSegment(t, route, p);
    return v.length ? [fc.constantFrom(...v).map((raw) => ({ raw }))] : [];
  };
  const unknown = unknownSegment.map((raw) => ({ raw }));
  const dot = fc.constantFrom(...DOT_SEGMENTS).map((raw) => ({ raw }));

  const build = (
    reason: Reason,
    actors: Actor[] | fc.Arbitrary<Actor>,
    segments: fc.Arbitrary<Segment[]>,
    body: fc.Arbitrary<Buffer | undefined>,
  ): fc.Arbitrary<FuzzRequest> =>
    fc
      .record({
        actor: Array.isArray(actors) ? fc.constantFrom(...actors) : actors,
        segments,
        query: queryArb(a, b),
        contentType: fc.constantFrom(...CONTENT_TYPES),
        extra: extraHeaders,
        body,
        // GET routes are also asked with methods no route registers (and each GET also as HEAD: see the test).
        getAs: fc.constantFrom('GET', 'GET', 'GET', 'GET', 'OPTIONS', 'PURGE', 'PROPFIND'),
        chunked: fc.boolean(),
      })
      .map(({ actor, segments: s, query, contentType, extra, body: bytes, getAs, chunked }) => {
        let i = 0;
        const path = route.path.replace(/:[A-Za-z_]+/g, () => s[i++]!.raw);
        const headers: [string, string][] = [];
        if (actor.authorization !== undefined) headers.push(['Authorization', actor.authorization]);
        if (contentType !== undefined && bytes !== undefined) headers.push(['Content-Type', contentType]);
        headers.push(...extra);
        const method = route.method === 'GET' ? getAs : route.method;
        const body = READ_METHODS.has(method) ? undefined : bytes;
        return { routeKey: route.key, reason, actor: actor.label, method, target: path + query, headers, body, chunked: chunked && body !== undefined };
      })
      // Node refuses request heads over 16 KiB itself, before the app: stay within that.
      .filter((r) => r.target.length + r.headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 0) < 14_000)
      .filter((r) => reason !== 'foreign' || !normalizesOntoParamless(r.target, world));

  // Anyone, the unauthenticated (refused at the door) drawn less than those who get further in.
  const anyone = fc.oneof(
    { arbitrary: fc.constantFrom(...world.actors.filter((x) => x.kind === 'unauthenticated')), weight: 1 },
    { arbitrary: fc.constantFrom(...world.actors.filter((x) => x.kind !== 'unauthenticated')), weight: 3 },
  );
  const each = (gen: (p: string, i: number) => fc.Arbitrary<Segment>) => fc.tuple(...route.params.map(gen)) as fc.Arbitrary<Segment[]>;
  const anyReal = (p: string) => [...real(a, p), ...real(b, p)];

  const byReason: Record<Reason, () => fc.Arbitrary<FuzzRequest>> = {
    // Reads: mostly by a principal of the tenant the path names (so the handler runs to the end), else anything at all.
    read: () =>
      fc.oneof(
        {
          arbitrary: fc.constantFrom<'a' | 'b'>('a', 'b').chain((key) => {
            const t = tenants[key];
            const actors = world.actors.filter((x) => x.kind === 'site-admin' || (x.kind === 'tenant' && x.tenant === key));
            return build('read', actors, each((p) => seg(real(t, p).length ? real(t, p) : [unknown])), fc.constant(undefined));
          }),
          weight: 2,
        },
        { arbitrary: build('read', anyone, each((p) => seg([...anyReal(p), ...anyReal(p), unknown, dot])), fc.constant(undefined)), weight: 1 },
      ),
    // A principal of one tenant reading what the other's path values name: no dot segments, which
    // could resolve onto the caller's own lists.
    'foreign-read': () =>
      fc.constantFrom(...world.actors.filter((x) => x.kind === 'tenant')).chain((actor) => {
        const victim = actor.tenant === 'a' ? b : a;
        return build('foreign-read', [actor], each((p) => seg(real(victim, p).length ? [...real(victim, p), ...real(victim, p), unknown] : [unknown])), fc.constant(undefined));
      }),
    unauthenticated: () =>
      build('unauthenticated', world.actors.filter((x) => x.kind === 'unauthenticated'), each((p) => seg([...anyReal(p), unknown, dot])), anyBody),
    foreign: () =>
      // The reader sees what it may not change: the sharpest case, drawn twice as often as all tenants together.
      fc
        .oneof(
          { arbitrary: fc.constantFrom(...world.actors.filter((x) => x.kind === 'no-rights')), weight: 2 },
          { arbitrary: fc.constantFrom(...world.actors.filter((x) => x.kind === 'tenant')), weight: 1 },
        )
        .chain((actor) => {
          const victim = actor.kind === 'no-rights' ? tenants[actor.tenant!] : actor.tenant === 'a' ? b : a;
          return build('foreign', [actor], each((p) => seg([...real(victim, p), ...real(victim, p), ...real(victim, p), unknown, dot])), anyBody);
        }),
    unknown: () =>
      fc.nat({ max: route.params.length - 1 }).chain((forced) =>
        build('unknown', anyone, each((p, i) => (i === forced ? unknown : seg([...anyReal(p), unknown]))), anyBody),
      ),
    'bad-body': () =>
      fc.constantFrom<'a' | 'b'>('a', 'b').chain((key) => {
        const t = tenants[key];
        const actors = world.actors.filter((x) => x.kind === 'site-admin' || x.tenant === key);
        const segments = each((p) => seg(real(t, p).length ? real(t, p) : [unknown]));
        return build('bad-body', actors, segments, route.surface === 'capability' ? invalidUpload : invalidDocument);
      }),
  };
  // Who-may-act and body refusals have the most paths through a handler: they are drawn more often.
  const weight: Record<Reason, number> = { read: 2, 'foreign-read': 1, unauthenticated: 1, foreign: 3, unknown: 2, 'bad-body': 2 };
  return fc.oneof(...reasons.map((r) => ({ arbitrary: byReason[r](), weight: weight[r] })));
}

/** Whether resolving dot segments turns the target into a route without parameters (say POST /api/v2/organizations). */
function normalizesOntoParamless(target: string, world: World): boolean {
  const path = target.split('?')[0]!;
  const normalized = new URL(path, 'http://x').pathname;
  return normalized !== path && world.paramlessPaths.has(normalized.replace(/\/$/, ''));
}

/** The normalized path the server routes on (dot segments resolved, as URL parsing does). */
export function normalizedPath(target: string): string {
  return new URL(target.split('?')[0]!, 'http://x').pathname;
}
