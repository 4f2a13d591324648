import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization, publish } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;

/** A corpus whose ranking the assertions below spell out. */
const CORPUS: [string, string, string, Record<string, string>][] = [
  ['acme', 'vpc', 'aws', { 'README.md': '# VPC\n\nA virtual private cloud.\n', 'main.tf': 'variable "cidr" {}\n' }],
  ['acme', 'vpc-endpoints', 'aws', { 'README.md': '# Endpoints\n\nInterface endpoints for services.\n', 'main.tf': 'variable "services" {}\n' }],
  ['acme', 'network', 'aws', { 'README.md': '# Network\n\nBuilds a VPC, subnets and routes.\n', 'main.tf': 'variable "name" {}\n' }],
  ['acme', 'database', 'aws', { 'README.md': '# Database\n\nA PostgreSQL cluster.\n', 'main.tf': 'variable "vpc_id" {}\n' }],
  ['acme', 'vpc', 'google', { 'README.md': '# VPC\n\nA Google network.\n', 'main.tf': 'variable "project" {}\n' }],
  ['globex', 'vpc', 'aws', { 'README.md': '# VPC\n\nGlobex VPC.\n', 'main.tf': 'variable "cidr" {}\n' }],
  ['acme', 'dns', 'aws', { 'README.md': '# DNS\n\nRoute 53 zones. Mentions vpc associations in the readme only.\n', 'main.tf': 'variable "zone" {}\n' }],
];

const names = (r: { json: any }) => r.json.modules.map((m: any) => `${m.namespace}/${m.name}/${m.provider}`);

beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  await createOrganization(t, 'globex');
  for (const [ns, name, provider, files] of CORPUS) await publish(t, ns, name, provider, '1.0.0', files);
});
afterAll(async () => {
  await t.close();
});

describe('ranked search', () => {
  it('ranks exact name matches first, then name, description, then readme and interface matches', async () => {
    const r = await t.api('GET', '/v1/modules/search?q=vpc');
    expect(r.status).toBe(200);
    const got: string[] = names(r);
    expect(got.slice(0, 3).sort()).toEqual(['acme/vpc/aws', 'acme/vpc/google', 'globex/vpc/aws']);
    expect(got[3]).toBe('acme/vpc-endpoints/aws');
    expect(got[4]).toBe('acme/network/aws');
    expect(got.slice(5).sort()).toEqual(['acme/database/aws', 'acme/dns/aws']);
  });

  it('matches prefixes and requires every word', async () => {
    expect(names(await t.api('GET', '/v1/modules/search?q=postgre'))).toEqual(['acme/database/aws']);
    expect(names(await t.api('GET', '/v1/modules/search?q=vpc%20google'))).toEqual(['acme/vpc/google']);
    expect(names(await t.api('GET', '/v1/modules/search?q=nothing-like-this'))).toEqual([]);
  });

  it('applies the provider, namespace and verified filters and pages', async () => {
    expect(names(await t.api('GET', '/v1/modules/search?q=vpc&provider=google'))).toEqual(['acme/vpc/google']);
    expect(names(await t.api('GET', '/v1/modules/search?q=vpc&namespace=globex'))).toEqual(['globex/vpc/aws']);
    expect(names(await t.api('GET', '/v1/modules/search?q=vpc&verified=true'))).toEqual([]);
    const p1 = await t.api('GET', '/v1/modules/search?q=vpc&limit=2');
    const p2 = await t.api('GET', '/v1/modules/search?q=vpc&limit=2&offset=2');
    expect(p1.json.meta).toMatchObject({ limit: 2, current_offset: 0, next_offset: 2 });
    expect(p2.json.meta).toMatchObject({ limit: 2, current_offset: 2, next_offset: 4, prev_offset: 0 });
    const all = names(await t.api('GET', '/v1/modules/search?q=vpc'));
    expect([...names(p1), ...names(p2)]).toEqual(all.slice(0, 4));
  });

  it('treats quotes, operators and punctuation as separators, never as errors', async () => {
    for (const q of ['"vpc', 'vpc AND', 'NOT vpc', 'vpc OR (', '*', 'vpc*', 'NEAR(vpc', '{}', "'", 'vpc:aws', '^vpc', '-', '""']) {
      const r = await t.api('GET', `/v1/modules/search?q=${encodeURIComponent(q)}`);
      expect(r.status, q).toBe(200);
      expect(Array.isArray(r.json.modules), q).toBe(true);
    }
    expect(names(await t.api('GET', `/v1/modules/search?q=${encodeURIComponent('"vpc" (google)!')}`))).toEqual(['acme/vpc/google']);
  });

  it('shows only what the caller may read', async () => {
    const stranger = await createUserWithToken(t, 'stranger');
    const r = await t.api('GET', '/v1/modules/search?q=vpc', { token: stranger.token });
    expect(r.json.modules).toEqual([]);
  });

  it('stays in step with deletes and new versions', async () => {
    await publish(t, 'acme', 'dns', 'aws', '2.0.0', { 'README.md': '# DNS\n\nHosted zones.\n', 'main.tf': 'variable "zone" {}\n' });
    expect(names(await t.api('GET', '/v1/modules/search?q=associations'))).toEqual([]);
    expect(names(await t.api('GET', '/v1/modules/search?q=hosted'))).toEqual(['acme/dns/aws']);
    expect((await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/dns/aws')).status).toBe(204);
    expect(names(await t.api('GET', '/v1/modules/search?q=hosted'))).toEqual([]);
    const rows = await t.running.deps.db.selectFrom('registry_modules').select('id').execute();
    const { sql } = await import('kysely');
    const fts = await sql<{ n: number }>`select count(*) as n from registry_search`.execute(t.running.deps.db);
    expect(Number(fts.rows[0]!.n)).toBe(rows.length);
  });
});
