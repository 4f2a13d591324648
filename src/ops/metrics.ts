import type { MiddlewareHandler } from 'hono';
import { collectDefaultMetrics, Gauge, Registry, type Metric } from 'prom-client';
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
  /** The same for one method, route and status answered again and again: a recorder that finds its series once. */
  recorder(method: string, route: string, status: number): (seconds: number) => void;
}

export function createMetrics(deps: Deps): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'terrace' });
  // The event-loop lag histogram samples with a timer of this period: prom-client's default of
  // 10 ms wakes an idle process 100 times a second (and, on a shared core, preempts whatever else
  // runs there as often); every 100 ms still catches the stalls an operator looks for.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });

  const duration = new RequestDurations();
  registry.registerMetric(duration as unknown as Metric);

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

  const observe = duration.observe.bind(duration);
  const middleware: MiddlewareHandler = async (c, next) => {
    const started = performance.now();
    await next();
    observe(c.req.method, routeLabel(c), c.res.status, (performance.now() - started) / 1000);
  };
  return { registry, middleware, observe, recorder: duration.recorder.bind(duration) };
}

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60];

interface DurationSeries {
  labels: { method: string; route: string; status: string };
  /** Observations per bucket (not cumulative); the last is above every bound. */
  buckets: number[];
  sum: number;
  count: number;
}

const seriesKey = (method: string, route: string, status: number) => `${method} ${status} ${route}`;

function record(s: DurationSeries, seconds: number): void {
  let i = 0;
  while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
  s.buckets[i]!++;
  s.sum += seconds;
  s.count++;
}

/**
 * terrace_http_request_duration_seconds by method, route pattern and status: a histogram as
 * prom-client's Histogram writes it, kept here because that one hashes its label object on
 * every observation (a few per cent of a cached registry answer). A series is found by one
 * string key; prom-client's registry formats it with the other metrics at scrape time.
 */
class RequestDurations {
  readonly name = 'terrace_http_request_duration_seconds';
  readonly help = 'HTTP request duration by method, route pattern and status';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, DurationSeries>();
  /** Moves on every reset(), which drops the series a recorder holds. */
  private resets = 0;

  observe(method: string, route: string, status: number, seconds: number): void {
    record(this.seriesOf(method, route, status), seconds);
  }

  /**
   * One series' recorder, for a caller that answers the same method, route and status again and
   * again (the registry's lean path): no key to build and look up per request. Stays valid
   * across reset(): the series is put back on its next observation.
   */
  recorder(method: string, route: string, status: number): (seconds: number) => void {
    let s = this.seriesOf(method, route, status);
    let resets = this.resets;
    return (seconds) => {
      if (resets !== this.resets) {
        s = this.seriesOf(method, route, status);
        resets = this.resets;
      }
      record(s, seconds);
    };
  }

  private seriesOf(method: string, route: string, status: number): DurationSeries {
    const key = seriesKey(method, route, status);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels: { method, route, status: String(status) }, buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0), sum: 0, count: 0 }));
    return s;
  }

  async get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      DURATION_BUCKETS.forEach((le, i) => {
        cumulative += s.buckets[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...s.labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...s.labels }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.resets++;
    this.series.clear();
  }
}
