import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { GenerationCache } from '../db/generations.js';
import type { Deps } from '../deps.js';
import { presentedToken } from '../http/auth.js';
import { WRITE_BATCH_MAX, WriteBatch, type BatchedAnswer } from '../http/write-batch.js';
import { cachedPrincipal, resolvePrincipal, type Principal } from '../identity/principal.js';
import { hashToken, isTaskAccessToken } from '../identity/tokens.js';
import { loggablePath } from '../logger.js';
import type { Metrics } from '../ops/metrics.js';
import { cachedReadableOrganizationIds, readableModule } from './catalog.js';
import { peekModule, versionsBody, type DownloadVersion } from './cache.js';
import { peekDownloadable, countedDownload, downloadLocation, cachedListPage } from './protocol.js';
import type { ModuleWithOrg } from './store.js';

export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

const VERSIONS_ROUTE = '/v1/modules/:namespace/:name/:provider/versions';
const DOWNLOAD_ROUTE = '/v1/modules/:namespace/:name/:provider/:version/download';
const CLIENT_REQUEST_ID = /^[\w\-=]{1,255}$/;
const AUTHORIZATION = /^authorization$/i;
const X_REQUEST_ID = /^x-request-id$/i;

/** What this path reads of a request's headers. */
interface LeanHeaders {
  authorization: string | undefined;
  requestId: string | undefined;
}

/**
 * The two headers read here, from the parser's raw list in one pass (IncomingMessage.headers
 * builds an object of every header, each name lower-cased, on first use), as the app reads them:
 * repeats joined with ", ". An X-Request-Id sent twice is then no valid id (a new one is made),
 * and null when Authorization is sent twice: the app refuses that (a joined value is no bearer
 * token), so it is left to the app.
 */
function leanHeaders(req: IncomingMessage): LeanHeaders | null {
  const raw = req.rawHeaders;
  let authorization: string | undefined;
  let requestId: string | undefined;
  let ids = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && AUTHORIZATION.test(name)) {
      if (authorization !== undefined) return null;
      authorization = raw[i + 1];
    } else if (name.length === 12 && X_REQUEST_ID.test(name)) {
      requestId = ids++ === 0 ? raw[i + 1] : undefined;
    }
  }
  return { authorization, requestId };
}

/**
 * What a version list or download URL, spelled exactly so, was last answered from here: its
 * module and, for a download, the version. Who may read it is still decided on every request.
 */
interface KnownTarget {
  module: ModuleWithOrg;
  version?: DownloadVersion;
}
/**
 * The list routes' base without its slash. Only the protocol's own: under /api/ the app adds the
 * API's headers (rate limit, versions), so those pages stay the app's.
 */
const LIST_BASE = '/v1/modules';

/**
 * What the registry protocol's hottest requests are answered with straight from node:http when
 * everything they need is cached, without the framework's per-request work (Request and Context
 * objects, the authorization scope, routing over the whole API): the two requests `terraform
 * init` makes per module (its version list and a version's download location) and list and
 * search pages already rendered. Anything else, and any request this path cannot answer with a
 * success (no token where one is needed, an unknown token, a module the caller may not read, a
 * version that is not published, a page not cached, an error), goes to the app unchanged, which
 * answers it as it always has. Same answers, same headers, same metrics and access log; the app's
 * handlers share the functions used here. Answers made here are ended together, once the requests
 * read in one go have been handled (WriteBatch; docs/performance.md has what that is worth).
 */
export function leanRegistryPath(deps: Deps, metrics: Metrics): (req: IncomingMessage, res: ServerResponse, app: NodeListener) => void {
  const log = deps.logger;
  /**
   * The Authorization header a connection last sent here and its token's hash: a keep-alive
   * client (Terraform, a CI job) sends the same one on every request, so the token is hashed
   * once per connection rather than once per request. Only well-formed user, team and
   * organization tokens are kept; what a token may do is still read from the principal cache
   * on every request. The entry goes with its connection.
   */
  const lastAuthorization = new WeakMap<Socket, { header: string; hash: string }>();
  /**
   * Version list and download URLs already answered from the caches, by the request target as
   * sent: a repeat is one lookup, without splitting the path or building the module's key. Under
   * the registry generation, like the module and version caches its entries come from.
   */
  const known = new GenerationCache<string, KnownTarget>(deps.generations, 'registry', deps.config.cacheMaxEntries);
  const observeVersions = metrics.recorder('GET', VERSIONS_ROUTE, 200);
  const observeDownload = metrics.recorder('GET', DOWNLOAD_ROUTE, 204);
  /** The list routes' recorders, by route label (a handful: the list, search, a namespace, a name). */
  const listRecorders = new Map<string, (seconds: number) => void>();
  const observeList = (route: string) => {
    let observe = listRecorders.get(route);
    if (observe === undefined) listRecorders.set(route, (observe = metrics.recorder('GET', route, 200)));
    return observe;
  };

  /**
   * The caller's principal from the caches: null for no token, undefined when only the app can
   * tell (a token not cached, due a touch, malformed or a run task's).
   */
  function cachedCaller(req: IncomingMessage, header: string | undefined): Principal | null | undefined {
    const last = lastAuthorization.get(req.socket);
    if (last !== undefined && last.header === header) return cachedPrincipal(deps, last.hash);
    const token = presentedToken(header);
    if (token === null || token === undefined) return token;
    if (isTaskAccessToken(token)) return undefined;
    const hash = hashToken(token);
    lastAuthorization.set(req.socket, { header: header!, hash });
    return cachedPrincipal(deps, hash);
  }

  /**
   * A version list or download location from the caches, without a single await: the module (and
   * version) the URL names is remembered under it, and answered as a known URL. False when
   * anything is not cached (the module, the version, the caller; a token to touch, a presigned
   * URL to make): answer() below then reads what it needs.
   */
  function answerFromCache(req: IncomingMessage, res: ServerResponse, h: LeanHeaders, url: string, parts: string[], started: number): boolean {
    const generation = known.generation();
    const module = peekModule(deps, parts[3]!, parts[4]!, parts[5]!);
    if (!module) return false;
    const target: KnownTarget = { module };
    if (parts.length === 8) {
      target.version = peekDownloadable(deps, module, parts[6]!);
      if (target.version === undefined) return false;
    }
    known.set(url, target, generation);
    return answerKnown(req, res, h, target, started);
  }

  /** A URL answered before: true if answered again (the caller may read its module). */
  function answerKnown(req: IncomingMessage, res: ServerResponse, h: LeanHeaders, target: KnownTarget, started: number): boolean {
    const principal = cachedCaller(req, h.authorization);
    if (principal === undefined) return false;
    const orgs = cachedReadableOrganizationIds(deps, principal);
    if (!orgs || (orgs !== 'all' && !orgs.includes(target.module.organization_id))) return false;
    if (target.version === undefined) send(res, h, 200, observeVersions, started, versionsBody(target.module));
    else send(res, h, 204, observeDownload, started, undefined, countedDownload(deps, target.module, target.version));
    return true;
  }

  /**
   * A list or search page already rendered for callers who read what this one reads (one past its
   * lifetime too, as the app would serve it: its totals are read again behind it): true if answered.
   */
  function listPageFromCache(req: IncomingMessage, res: ServerResponse, h: LeanHeaders, target: string, started: number): boolean {
    const principal = cachedCaller(req, h.authorization);
    if (principal === undefined) return false;
    const orgs = cachedReadableOrganizationIds(deps, principal);
    const page = orgs && cachedListPage(deps, orgs, target);
    if (!page) return false;
    send(res, h, 200, observeList(page.route), started, page.body);
    return true;
  }

  /** An answer waiting in the write batch, with what its metric and access log need. */
  interface LeanAnswer extends BatchedAnswer {
    status: number;
    observe: (seconds: number) => void;
    started: number;
    requestId: string;
  }
  const batch = new WriteBatch<LeanAnswer>(
    WRITE_BATCH_MAX,
    (a, now) => {
      const seconds = (now - a.started) / 1000;
      a.observe(seconds);
      if (log.isLevelEnabled('info')) {
        log.info({ reqId: a.requestId, method: 'GET', path: loggablePath(a.res.req.url!), status: a.status, ms: Math.round(seconds * 10_000) / 10 }, 'request');
      }
    },
    (err) => log.error({ err }, 'the registry lean path could not write an answer'),
  );

  /** Sets an answer's head now (Node sends it with the body) and leaves its end to the write batch (see WriteBatch). */
  function send(res: ServerResponse, h: LeanHeaders, status: number, observe: (seconds: number) => void, started: number, body?: Uint8Array, location?: string): void {
    const supplied = h.requestId;
    const requestId = supplied !== undefined && CLIENT_REQUEST_ID.test(supplied) ? supplied : randomUUID();
    if (body) res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.byteLength, 'X-Request-Id': requestId });
    else res.writeHead(status, { 'X-Request-Id': requestId, 'X-Terraform-Get': location! });
    batch.add({ res, body, status, observe, started, requestId });
  }

  async function answer(res: ServerResponse, h: LeanHeaders, parts: string[], started: number): Promise<boolean> {
    const token = presentedToken(h.authorization);
    let principal = null;
    if (token === undefined || (token !== null && isTaskAccessToken(token))) return false;
    if (token !== null) {
      principal = await resolvePrincipal(deps, token);
      if (!principal) return false;
    } else if (!deps.config.publicRead) {
      return false;
    }
    const module = await readableModule(deps, principal, parts[3]!, parts[4]!, parts[5]!);
    if (parts.length === 7) {
      send(res, h, 200, observeVersions, started, versionsBody(module));
    } else {
      const url = await downloadLocation(deps, module, parts[6]!, true);
      send(res, h, 204, observeDownload, started, undefined, url);
    }
    return true;
  }

  /** A list route's request (url starts with LIST_BASE): the base alone, search, a namespace or a namespace and name, any query. */
  function isListTarget(url: string): boolean {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (path.length > LIST_BASE.length && path[LIST_BASE.length] !== '/') return false;
    let slashes = 0;
    for (let i = LIST_BASE.length; i < path.length; i++) if (path[i] === '/') slashes++;
    return slashes <= 2;
  }

  return (req, res, app) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(LIST_BASE)) return app(req, res);
    const started = performance.now();
    const h = leanHeaders(req);
    if (h === null) return app(req, res);
    const target = known.get(url);
    try {
      if (target !== undefined && answerKnown(req, res, h, target, started)) return;
    } catch (err) {
      if (res.headersSent) return log.error({ err }, 'the registry lean path failed after answering');
    }
    const parts = url.split('/');
    // A known URL is a version list or download spelled as below; its caller is not in the
    // caches (answerKnown said so), so answer() reads them.
    if (target === undefined) {
      const last = parts[parts.length - 1];
      // The version list and download paths spelled the one way Terraform spells them: no query,
      // no percent-encoding, no empty segment.
      const registryCall = url.startsWith('/v1/modules/') && !url.includes('?') && !url.includes('%') && ((parts.length === 7 && last === 'versions') || (parts.length === 8 && last === 'download')) && !parts.includes('', 1);
      if (!registryCall) {
        // A page rendered before for the same target: any other spelling is a miss, which the app answers.
        try {
          if (isListTarget(url) && listPageFromCache(req, res, h, url, started)) return;
        } catch (err) {
          if (res.headersSent) return log.error({ err }, 'the registry lean path failed after answering');
        }
        return app(req, res);
      }
      try {
        if (answerFromCache(req, res, h, url, parts, started)) return;
      } catch (err) {
        if (res.headersSent) return log.error({ err }, 'the registry lean path failed after answering');
      }
    }
    answer(res, h, parts, started).then(
      (answered) => {
        if (!answered) app(req, res);
      },
      (err) => {
        if (!res.headersSent) return app(req, res);
        log.error({ err }, 'the registry lean path failed after answering');
      },
    );
  };
}
