import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Deps } from '../deps.js';
import { downloadsCounted } from '../registry/catalog.js';

/**
 * Prometheus metrics. Request timings are per process; everything about the registry's content
 * is read from the store at scrape time, so several instances report the same truth.
 */
export interface Metrics {
  registry: Registry;
  middleware: MiddlewareHandler;
  /** Records one request answered outside Hono (the registry's lean path), by route pattern. */
  observe(method: string, route: string, status: number, seconds: number): void;
}

export function createMetrics(deps: Deps): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'terrace' });
  collectDefaultMetrics({ register: registry });

  const duration = new Histogram({
    name: 'terrace_http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers: [registry],
  });

  const fromStore = (name: string, help: string, query: () => Promise<number>) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        this.set(await query());
      },
    });
  const count = async (q: Promise<{ n: number | bigint | string } | undefined>) => Number((await q)?.n ?? 0);
  fromStore('terrace_registry_modules', 'Modules in the registry', () =>
    count(deps.db.selectFrom('registry_modules').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst()),
  );
  fromStore('terrace_registry_module_versions', 'Published module versions', () =>
    count(deps.db.selectFrom('registry_module_versions').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'ok').executeTakeFirst()),
  );
  // The store's total plus this process's counts not yet written (at most TERRACE_DOWNLOAD_FLUSH_MS old).
  fromStore('terrace_registry_downloads', 'Module downloads counted since the registry began', () => downloadsCounted(deps));
  fromStore('terrace_jobs_due', 'Background jobs due and not yet done', () =>
    count(deps.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('run_at', '<=', deps.clock.now().toISOString()).executeTakeFirst()),
  );

  const middleware: MiddlewareHandler = async (c, next) => {
    const end = duration.startTimer();
    await next();
    // The route pattern, never the raw path: capability URLs carry secrets and ids explode cardinality.
    end({ method: c.req.method, route: c.res.status === 404 && routePath(c, -1) === '*' ? 'unmatched' : routePath(c, -1), status: String(c.res.status) });
  };
  const observe = (method: string, route: string, status: number, seconds: number) =>
    duration.observe({ method, route, status: String(status) }, seconds);
  return { registry, middleware, observe };
}
