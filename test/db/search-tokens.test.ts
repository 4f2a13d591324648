import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization, publish } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Both stores split, fold and match words alike (FTS5's unicode61 on SQLite, dialect.ts on PostgreSQL). */

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  await publish(t, 'acme', 'cafe', 'aws', '1.0.0', {
    'README.md': '# Café\n\nRésumé of the naïve network.\n',
    'main.tf': 'variable "subnet_ids" {}\noutput "vpc_arn" { value = "x" }\n',
  });
  await publish(t, 'acme', 'other', 'aws', '1.0.0', { 'README.md': '# Other\n\nUnrelated.\n' });
});
afterAll(async () => {
  await t.close();
});

const search = async (q: string) => {
  const r = await t.api('GET', `/v1/modules/search?q=${encodeURIComponent(q)}`);
  expect(r.status).toBe(200);
  return r.json.modules.map((m: { name: string }) => m.name);
};

describe('search words', () => {
  it.each([
    ['resume', ['cafe']],
    ['RÉSUMÉ', ['cafe']],
    ['naive netw', ['cafe']],
    ['subnet', ['cafe']],
    ['ids', ['cafe']],
    ['arn vpc', ['cafe']],
    ['caf', ['cafe']],
    ['"naïve" -network*', ['cafe']],
    ['naive AND network', []],
    ['unrelated', ['other']],
    ['resume unrelated', []],
    ['***', []],
  ])('%s finds %j', async (q, expected) => {
    expect(await search(q)).toEqual(expected);
  });
});
