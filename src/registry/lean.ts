import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Deps } from '../deps.js';
import { cachedPrincipal, resolvePrincipal } from '../identity/principal.js';
import { isTaskAccessToken } from '../identity/tokens.js';
import { loggablePath } from '../logger.js';
import type { Metrics } from '../ops/metrics.js';
import { signedArchiveUrl, signsArchiveUrls } from './archive-url.js';
import { cachedReadableOrganizationIds, readableModule } from './catalog.js';
import { peekDownloadVersion, peekModule, versionsBody } from './cache.js';
import { normalizeRequestedVersion } from './names.js';
import { downloadLocation } from './protocol.js';

export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

const VERSIONS_ROUTE = '/v1/modules/:namespace/:name/:provider/versions';
const DOWNLOAD_ROUTE = '/v1/modules/:namespace/:name/:provider/:version/download';
const BEARER = /^Bearer\s+(\S+)\s*$/i;
const CLIENT_REQUEST_ID = /^[\w\-=]{1,255}$/;

/**
 * The two requests `terraform init` makes per module — its version list and a version's download
 * location — answered straight from node:http when everything they need is cached, without the
 * framework's per-request work (Request and Context objects, the authorization scope, routing
 * over the whole API). Anything else, and any request this path cannot answer with a success
 * (no token where one is needed, an unknown token, a module the caller may not read, a version
 * that is not published, an error), goes to the app unchanged, which answers it as it always
 * has. Same answers, same headers, same metrics and access log; the app's handlers share the
 * functions used here.
 */
export function leanRegistryPath(deps: Deps, metrics: Metrics): (req: IncomingMessage, res: ServerResponse, app: NodeListener) => void {
  const log = deps.logger;

  /**
   * Everything from the caches, without a single await: true if answered. Undefined anywhere
   * (not cached, a token to touch, a presigned URL to make) leaves it to answer() below.
   */
  function answerFromCache(req: IncomingMessage, res: ServerResponse, parts: string[], started: number): boolean {
    const header = req.headers.authorization;
    let principal = null;
    if (header !== undefined && header.trim() !== '') {
      const m = BEARER.exec(header);
      if (!m || isTaskAccessToken(m[1]!)) return false;
      const p = cachedPrincipal(deps, m[1]!);
      if (!p) return false;
      principal = p;
    }
    const orgs = cachedReadableOrganizationIds(deps, principal);
    const module = orgs && peekModule(deps, parts[3]!, parts[4]!, parts[5]!);
    if (!module || (orgs !== 'all' && !orgs!.includes(module.organization_id))) return false;
    if (parts.length === 7) {
      send(req, res, 200, VERSIONS_ROUTE, started, versionsBody(module));
      return true;
    }
    if (!signsArchiveUrls(deps)) return false;
    const version = normalizeRequestedVersion(parts[6]!);
    const row = version && peekDownloadVersion(deps, module.id, version);
    if (!row || row.status !== 'ok') return false;
    const url = signedArchiveUrl(deps, module, row);
    deps.downloads.count(module.id, deps.clock.now().toISOString().slice(0, 10));
    send(req, res, 204, DOWNLOAD_ROUTE, started, undefined, url);
    return true;
  }

  function send(req: IncomingMessage, res: ServerResponse, status: number, route: string, started: number, body?: Uint8Array, location?: string): void {
    const supplied = req.headers['x-request-id'];
    const requestId = typeof supplied === 'string' && CLIENT_REQUEST_ID.test(supplied) ? supplied : randomUUID();
    if (body) {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.byteLength, 'X-Request-Id': requestId });
      res.end(body);
    } else {
      res.writeHead(status, { 'X-Request-Id': requestId, 'X-Terraform-Get': location! });
      res.end();
    }
    const seconds = (performance.now() - started) / 1000;
    metrics.observe('GET', route, status, seconds);
    if (log.isLevelEnabled('info')) {
      log.info({ reqId: requestId, method: 'GET', path: loggablePath(req.url!), status, ms: Math.round(seconds * 10_000) / 10 }, 'request');
    }
  }

  async function answer(req: IncomingMessage, res: ServerResponse, parts: string[], started: number): Promise<boolean> {
    const header = req.headers.authorization;
    let principal = null;
    if (header !== undefined && header.trim() !== '') {
      const m = BEARER.exec(header);
      if (!m || isTaskAccessToken(m[1]!)) return false;
      principal = await resolvePrincipal(deps, m[1]!);
      if (!principal) return false;
    } else if (!deps.config.publicRead) {
      return false;
    }
    const module = await readableModule(deps, principal, parts[3]!, parts[4]!, parts[5]!);
    if (parts.length === 7) {
      send(req, res, 200, VERSIONS_ROUTE, started, versionsBody(module));
    } else {
      const url = await downloadLocation(deps, module, parts[6]!, true);
      send(req, res, 204, DOWNLOAD_ROUTE, started, undefined, url);
    }
    return true;
  }

  return (req, res, app) => {
    const url = req.url;
    // Only plain GETs of the two paths, spelled the one way Terraform spells them: no query,
    // no percent-encoding, no empty segment. Everything else is the app's.
    if (req.method !== 'GET' || url === undefined || !url.startsWith('/v1/modules/') || url.includes('?') || url.includes('%')) return app(req, res);
    const parts = url.split('/');
    const last = parts[parts.length - 1];
    if (!((parts.length === 7 && last === 'versions') || (parts.length === 8 && last === 'download')) || parts.includes('', 1)) return app(req, res);
    const started = performance.now();
    try {
      if (answerFromCache(req, res, parts, started)) return;
    } catch (err) {
      if (res.headersSent) return log.error({ err }, 'the registry lean path failed after answering');
    }
    answer(req, res, parts, started).then(
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
