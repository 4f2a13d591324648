import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization, publish } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Cached list and search pages: their modules and order follow the registry at once; their
 * download totals are read again once TERRACE_LIST_CACHE_TTL_MS has passed, without the search.
 */
let t: TestServer;
const TTL_MS = 300;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_LIST_CACHE_TTL_MS: String(TTL_MS), TERRACE_DOWNLOAD_FLUSH_MS: '50' });
  await createOrganization(t, 'acme');
  await publish(t, 'acme', 'vpc', 'aws', '1.0.0');
  await publish(t, 'acme', 'vpc-endpoints', 'aws', '1.0.0');
  await publish(t, 'acme', 'subnet', 'aws', '1.0.0');
});
afterAll(async () => {
  await t.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const summary = (r: { json: any }) => r.json.modules.map((m: any) => `${m.id} ${m.downloads}`);

/** GETs target until its page's downloads satisfy done (the refresh runs behind a request), at most 5 s. */
async function until(target: string, done: (modules: any[]) => boolean): Promise<{ json: any; text: string }> {
  for (let i = 0; ; i++) {
    const r = await t.api('GET', target);
    expect(r.status).toBe(200);
    if (done(r.json.modules)) return r;
    if (i > 100) throw new Error(`${target} never showed the downloads: ${r.text}`);
    await sleep(50);
  }
}

describe('a cached list or search page', () => {
  it.each(['/v1/modules/search?q=vpc', '/v1/modules/acme', '/v1/modules?provider=aws'])('%s: its download totals are read again after the TTL; nothing else in it changes', async (target) => {
    const first = await t.api('GET', target);
    expect(first.status).toBe(200);
    const before = first.json.modules.find((m: any) => m.id === 'acme/vpc/aws/1.0.0');
    for (let i = 0; i < 2; i++) expect((await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0/download')).status).toBe(204);
    await sleep(TTL_MS + 50);
    const after = await until(target, (mods) => mods.find((m) => m.id === 'acme/vpc/aws/1.0.0')?.downloads === before.downloads + 2);
    // The same modules in the same order, the same fields; only the counted module's total moved.
    expect(after.json.meta).toEqual(first.json.meta);
    expect(after.json.modules.map((m: any) => ({ ...m, downloads: 0 }))).toEqual(first.json.modules.map((m: any) => ({ ...m, downloads: 0 })));
    expect(summary(after).filter((s: string) => !s.startsWith('acme/vpc/aws/'))).toEqual(summary(first).filter((s: string) => !s.startsWith('acme/vpc/aws/')));
  });

  it('shows a publish and a deletion at once, before and after a totals refresh', async () => {
    const target = '/v1/modules/search?q=vpc';
    const ids = async () => (await t.api('GET', target)).json.modules.map((m: any) => m.id).sort();
    await t.api('GET', target);
    await sleep(TTL_MS + 50);
    await t.api('GET', target); // served as it was; its totals are read again behind it
    await publish(t, 'acme', 'vpc-peering', 'aws', '1.0.0');
    expect(await ids()).toEqual(['acme/vpc-endpoints/aws/1.0.0', 'acme/vpc-peering/aws/1.0.0', 'acme/vpc/aws/1.0.0']);
    await sleep(TTL_MS + 50);
    await t.api('GET', target);
    await sleep(100);
    expect(await ids()).toEqual(['acme/vpc-endpoints/aws/1.0.0', 'acme/vpc-peering/aws/1.0.0', 'acme/vpc/aws/1.0.0']);
    expect((await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/vpc-peering/aws')).status).toBe(204);
    expect(await ids()).toEqual(['acme/vpc-endpoints/aws/1.0.0', 'acme/vpc/aws/1.0.0']);
  });
});
