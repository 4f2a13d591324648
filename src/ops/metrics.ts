import type { MiddlewareHandler } from 'hono';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Deps } from '../deps.js';
import { routeLabel } from '../http/route.js';
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

  // One labelled child per (method, route, status): observing through it skips prom-client's
  // hashing of the label object on every request.
  const children = new Map<string, { observe(seconds: number): void }>();
  const observe = (method: string, route: string, status: number, seconds: number) => {
    const key = `${method} ${status} ${route}`;
    let child = children.get(key);
    if (!child) children.set(key, (child = duration.labels(method, route, String(status))));
    child.observe(seconds);
  };
  const middleware: MiddlewareHandler = async (c, next) => {
    const started = performance.now();
    await next();
    observe(c.req.method, routeLabel(c), c.res.status, (performance.now() - started) / 1000);
  };
  return { registry, middleware, observe };
}
