import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization, publish } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createMetrics } from '../../src/ops/metrics.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  await publish(t, 'acme', 'vpc', 'aws', '1.0.0');
  await publish(t, 'acme', 'vpc', 'aws', '1.1.0');
  await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0/download');
  await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0/download');
});
afterAll(async () => {
  await t.close();
});

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  if (!line) throw new Error(`no metric ${name}`);
  return Number(line.split(' ').pop());
}

describe('GET /metrics', () => {
  it('serves Prometheus text with registry counts read from the store', async () => {
    const r = await t.api('GET', '/metrics', { token: null });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(metric(r.text, 'terrace_registry_modules')).toBe(1);
    expect(metric(r.text, 'terrace_registry_module_versions')).toBe(2);
    expect(metric(r.text, 'terrace_registry_downloads')).toBe(2);
    expect(metric(r.text, 'terrace_jobs_due')).toBeGreaterThanOrEqual(0);
    expect(r.text).toContain('process_resident_memory_bytes');
  });

  it('times requests by route pattern, never by raw path', async () => {
    const r = await t.api('GET', '/metrics', { token: null });
    const lines = r.text.split('\n').filter((l) => l.startsWith('terrace_http_request_duration_seconds_count'));
    expect(lines.some((l) => l.includes('route="/v1/modules/:namespace/:name/:provider/:version/download"') && l.includes('status="204"'))).toBe(true);
    expect(lines.some((l) => l.includes('/uploads/modules/') && !l.includes(':token'))).toBe(false);
    expect(lines.some((l) => l.includes('acme'))).toBe(false);
  });

  it('labels a request by the route that answered it, or that would have answered a refused one', async () => {
    // /v1/modules/search also matches /v1/modules/:namespace, and …/versions matches …/:version:
    // the handlers registered first answer them.
    await t.api('GET', '/v1/modules/search?q=vpc');
    await t.api('GET', '/v1/modules/acme');
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions', { token: 'nope' })).status).toBe(401);
    expect((await t.api('GET', '/no/such/route')).status).toBe(404);
    const r = await t.api('GET', '/metrics', { token: null });
    const count = (route: string, status: number) =>
      r.text
        .split('\n')
        .filter((l) => l.startsWith('terrace_http_request_duration_seconds_count') && l.includes(`route="${route}"`) && l.includes(`status="${status}"`))
        .map((l) => Number(l.split(' ').pop()));
    expect(count('/v1/modules/search', 200)).toEqual([1]);
    expect(count('/v1/modules/:namespace', 200)).toEqual([1]);
    expect(count('/v1/modules/:namespace/:name/:provider/versions', 401)).toEqual([1]);
    expect(count('/v1/modules/:namespace/:name/:provider/:version', 401)).toEqual([]);
    expect(count('unmatched', 404)).toEqual([1]);
  });

  it('writes the request histogram as Prometheus expects: cumulative buckets up to +Inf, a sum and a count per series', async () => {
    const route = '/v1/modules/:namespace/:name/:provider/versions';
    for (let i = 0; i < 3; i++) expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions')).status).toBe(200);
    const r = await t.api('GET', '/metrics', { token: null });
    const series = r.text.split('\n').filter((l) => l.startsWith('terrace_http_request_duration_seconds') && l.includes(`route="${route}"`) && l.includes('status="200"'));
    expect(r.text).toContain('# TYPE terrace_http_request_duration_seconds histogram');
    const buckets = series.filter((l) => l.startsWith('terrace_http_request_duration_seconds_bucket{'));
    expect(buckets.map((l) => /le="([^"]+)"/.exec(l)![1])).toEqual(['0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '10', '60', '+Inf']);
    const counts = buckets.map((l) => Number(l.split(' ').pop()));
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]!);
    const count = Number(series.find((l) => l.startsWith('terrace_http_request_duration_seconds_count{'))!.split(' ').pop());
    const sum = Number(series.find((l) => l.startsWith('terrace_http_request_duration_seconds_sum{'))!.split(' ').pop());
    expect(count).toBe(3);
    expect(counts.at(-1)).toBe(3);
    expect(sum).toBeGreaterThan(0);
    expect(series.every((l) => l.includes('service="terrace"') && l.includes('method="GET"'))).toBe(true);
  });
});

describe('request duration recorders', () => {
  it('count in their series, and again after the registry is reset', async () => {
    const m = createMetrics(t.running.deps);
    const count = async () => {
      const text = await m.registry.getSingleMetricAsString('terrace_http_request_duration_seconds');
      const line = text.split('\n').find((l) => l.startsWith('terrace_http_request_duration_seconds_count{') && l.includes('route="/recorded"'));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const record = m.recorder('GET', '/recorded', 200);
    record(0.002);
    record(0.003);
    m.observe('GET', '/recorded', 200, 0.004);
    expect(await count()).toBe(3);
    m.registry.resetMetrics();
    expect(await count()).toBe(0);
    record(0.001);
    expect(await count()).toBe(1);
    const text = await m.registry.getSingleMetricAsString('terrace_http_request_duration_seconds');
    expect(text).toContain('terrace_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/recorded",status="200"');
  });
});
