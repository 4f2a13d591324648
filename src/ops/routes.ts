import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../http/auth.js';
import type { Registry } from 'prom-client';

/**
 * Probes for orchestrators (/healthz: the process is alive; /readyz: it can serve) and
 * Prometheus metrics (/metrics).
 */
export function opsRoutes(deps: Deps, metrics: Registry): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/metrics', async (c) => c.body(await metrics.metrics(), 200, { 'Content-Type': metrics.contentType }));
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const checks: Record<string, string> = {};
    try {
      await deps.store.ping();
      checks.store = 'ok';
    } catch (err) {
      deps.logger.error({ err }, 'readiness: store check failed');
      checks.store = 'failing';
    }
    try {
      await deps.blobs.checkWritable();
      checks.blobs = 'ok';
    } catch (err) {
      deps.logger.error({ err }, 'readiness: blob store check failed');
      checks.blobs = 'failing';
    }
    const ready = Object.values(checks).every((v) => v === 'ok');
    return c.json({ status: ready ? 'ready' : 'not ready', checks }, ready ? 200 : 503);
  });
  return app;
}
