import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Deps } from '../deps.js';
import { resolvePrincipal } from '../identity/principal.js';
import { isTaskAccessToken } from '../identity/tokens.js';
import { loggablePath } from '../logger.js';
import type { Metrics } from '../ops/metrics.js';
import { readableModule } from './catalog.js';
import { versionsBody } from './cache.js';
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
    const supplied = req.headers['x-request-id'];
    const requestId = typeof supplied === 'string' && CLIENT_REQUEST_ID.test(supplied) ? supplied : randomUUID();
    let status: number;
    let route: string;
    if (parts.length === 7) {
      const body = versionsBody(module);
      status = 200;
      route = VERSIONS_ROUTE;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.byteLength, 'X-Request-Id': requestId });
      res.end(body);
    } else {
      const url = await downloadLocation(deps, module, parts[6]!, true);
      status = 204;
      route = DOWNLOAD_ROUTE;
      res.writeHead(204, { 'X-Request-Id': requestId, 'X-Terraform-Get': url });
      res.end();
    }
    const seconds = (performance.now() - started) / 1000;
    metrics.observe('GET', route, status, seconds);
    if (log.isLevelEnabled('info')) {
      log.info({ reqId: requestId, method: 'GET', path: loggablePath(req.url!), status, ms: Math.round(seconds * 10_000) / 10 }, 'request');
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
