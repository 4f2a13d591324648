import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { requestId } from 'hono/request-id';
import type { Deps } from './deps.js';
import { authenticate, type AppEnv } from './http/auth.js';
import { authorizationScope } from './http/authorized.js';
import { clientClosed } from './http/body.js';
import { ApiError, MAX_QUOTED_CHARS, notFound, payloadTooLarge, truncate } from './http/errors.js';
import { isRegistryPath, renderError } from './http/surface.js';
import { encryptionRoutes } from './encryption/routes.js';
import { identityRoutes } from './identity/routes.js';
import { loggablePath } from './logger.js';
import { createMetrics, type Metrics } from './ops/metrics.js';
import { opsRoutes } from './ops/routes.js';
import { membershipRoutes } from './organizations/membership-routes.js';
import { organizationRelatedRoutes } from './organizations/related-routes.js';
import { organizationRoutes } from './organizations/routes.js';
import { projectRoutes } from './projects/routes.js';
import { registryApiRoutes, uploadRoutes } from './registry/api.js';
import { configurationUploadRoutes, isPlanJsonUpload, runRoutes } from './runs/routes.js';
import { taskStageRoutes } from './runs/task-routes.js';
import { runTaskRoutes } from './runtasks/routes.js';
import { vcsRoutes } from './vcs/routes.js';
import { archiveRoutes } from './registry/archive-url.js';
import { discoveryRoutes } from './registry/discovery.js';
import { protocolRoutes } from './registry/protocol.js';
import { isStateVersionCreate, stateFileRoutes, stateRoutes } from './state/routes.js';
import { teamRoutes } from './teams/routes.js';
import { vcsModuleRoutes, vcsWebhookRoutes } from './vcs/module-routes.js';
import { webRoutes } from './web/routes.js';
import { workspaceRoutes } from './workspaces/routes.js';
import { workspaceTagRoutes } from './workspaces/tags-routes.js';

/**
 * Headers go-tfe and Terraform's cloud backend read from every /api/v2 response. The tfe
 * provider gates features on the server's version (X-TFE-Current-Version, then X-TFE-Version)
 * unless the app name is HCP Terraform's: without it, a workspace run task with several stages
 * fails in the provider ("does not support the stages attribute"). 2.0.1 is the highest minimum
 * it checks; Terrace serves every feature gated at or below it.
 */
const TFE_HEADERS: Record<string, string> = {
  'TFP-API-Version': '2.5',
  'TFP-AppName': 'Terrace',
  'X-TFE-Current-Version': '2.0.1',
  'X-RateLimit-Limit': '30',
};

export function createApp(deps: Deps, metrics: Metrics = createMetrics(deps)): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const log = deps.logger;

  app.use('*', authorizationScope);
  app.use('*', requestId({ headerName: 'X-Request-Id' }));
  app.use('*', metrics.middleware);
  app.use('*', async (c, next) => {
    // Access logs are info level; below it, this costs nothing per request.
    if (!log.isLevelEnabled('info')) return next();
    const started = performance.now();
    await next();
    log.info(
      {
        reqId: c.get('requestId'),
        method: c.req.method,
        path: loggablePath(c.req.path),
        status: c.res.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
      },
      'request',
    );
  });

  // A write is seen by this instance's caches before its response goes out (db/generations.ts).
  app.use('*', async (c, next) => {
    await next();
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') await deps.generations.sync();
  });
  app.use('/api/*', async (c, next) => {
    await next();
    for (const [k, v] of Object.entries(TFE_HEADERS)) c.header(k, v);
  });
  const jsonBodyLimit = bodyLimit({
    maxSize: deps.config.maxJsonBodyBytes,
    onError: () => {
      throw payloadTooLarge(`the request body exceeds the limit of ${deps.config.maxJsonBodyBytes} bytes`);
    },
  });
  // State version creation and plan JSON carry whole documents and apply their own limits.
  app.use('/api/*', (c, next) =>
    isStateVersionCreate(c.req.method, c.req.path) || isPlanJsonUpload(c.req.method, c.req.path) ? next() : jsonBodyLimit(c, next),
  );
  // No name, id, token or filter value in Terrace holds a NUL character, and PostgreSQL refuses
  // to compare a string that does (an error, not "no such row"): a path or query carrying one
  // (%00) names nothing, on either store.
  app.use('*', async (c, next) => {
    const u = new URL(c.req.url);
    if (u.pathname.includes('%00') || u.search.includes('%00')) throw notFound(`no such resource: the address holds a NUL character (%00)`);
    await next();
  });
  app.use('/api/*', authenticate(deps));
  app.use('/v1/*', authenticate(deps));
  app.use('/v2/*', authenticate(deps));

  app.route('/', opsRoutes(deps, metrics.registry));
  app.route('/', discoveryRoutes());
  app.get('/api/v2/ping', (c) => c.body(null, 204));
  app.route('/api/v2', identityRoutes(deps));
  app.route('/api/v2', encryptionRoutes(deps));
  app.route('/api/v2', organizationRoutes(deps));
  app.route('/api/v2', organizationRelatedRoutes(deps));
  app.route('/api/v2', membershipRoutes(deps));
  app.route('/api/v2', teamRoutes(deps));
  // Before the registry's: they take the calls on VCS-backed modules and pass the rest on.
  app.route('/api/v2', vcsModuleRoutes(deps));
  app.route('/api/v2', registryApiRoutes(deps));
  app.route('/api/v2', workspaceRoutes(deps));
  app.route('/api/v2', workspaceTagRoutes(deps));
  app.route('/api/v2', projectRoutes(deps));
  app.route('/api/v2', stateRoutes(deps));
  app.route('/api/v2', runTaskRoutes(deps));
  app.route('/api/v2', runRoutes(deps));
  app.route('/api/v2', taskStageRoutes(deps));
  app.route('/api/v2', vcsRoutes(deps));
  app.route('/', protocolRoutes(deps));
  app.route('/', archiveRoutes(deps));
  app.route('/', uploadRoutes(deps));
  app.route('/', vcsWebhookRoutes(deps));
  app.route('/', stateFileRoutes(deps));
  app.route('/', configurationUploadRoutes(deps));
  app.route('/', webRoutes(deps));

  app.notFound((c) => {
    const where = `${c.req.method} ${truncate(c.req.path, MAX_QUOTED_CHARS)}`;
    const detail = isRegistryPath(c.req.path) ? `no registry endpoint at ${where}` : `no endpoint at ${where}`;
    return renderError(c, notFound(detail));
  });

  app.onError((err, c) => {
    // Whatever the handler made of it, a client that went away is not a server error: no stack,
    // no 5xx. 499 (nginx's "client closed request") is what the access log and metrics record.
    if (clientClosed(c, err)) {
      log.info({ reqId: c.get('requestId'), method: c.req.method, path: loggablePath(c.req.path) }, 'client closed the connection before the request completed');
      return renderError(c, new ApiError(499, 'client closed request', 'the client closed the connection before the request completed'));
    }
    if (err instanceof ApiError) return renderError(c, err);
    if (err instanceof HTTPException && err.status < 500) {
      return renderError(c, new ApiError(err.status, 'bad request', err.message || 'the request could not be processed'));
    }
    log.error({ reqId: c.get('requestId'), err }, 'unhandled error');
    return renderError(
      c,
      new ApiError(500, 'internal server error', `an internal error occurred; quote request id ${c.get('requestId')} when reporting it`),
    );
  });

  return app;
}
