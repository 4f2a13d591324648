import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveEntries, hasCommand, homeWithToken, registryCounts, terrace, writeTree } from '../helpers/cli.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

// `terrace publish --all` over a monorepo, as CI runs it after every merge.
let t: TestServer;
let home: string;
let repo: string;

beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  home = homeWithToken(t, t.adminToken);
  repo = tempDir('terrace-monorepo-');
  writeTree(repo, {
    'modules/network/terrace-module.json': '{"provider": "aws"}\n',
    'modules/network/VERSION': '1.1.0\n',
    'modules/network/main.tf': 'output "net" {\n  value = 1\n}\n',
    'modules/dns/terrace-module.json': '{"name": "dns-zone", "provider": "aws", "version": "v2.0.0"}\n',
    'modules/dns/main.tf': 'output "dns" {\n  value = 1\n}\n',
    'platform/terraform-google-bucket/terrace-module.json': '',
    'platform/terraform-google-bucket/VERSION': '0.3.0\n',
    'platform/terraform-google-bucket/main.tf': 'output "bucket" {\n  value = 1\n}\n',
    'docs/README.md': 'not a module\n',
  });
  // Already published before this run: --all must skip it.
  await publish(t, 'acme', 'bucket', 'google', '0.3.0', { 'main.tf': 'output "bucket" {\n  value = 0\n}\n' });
});
afterAll(async () => {
  await t.close();
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

const versionsOf = async (addr: string) => {
  const r = await t.api('GET', `/v1/modules/${addr}/versions`);
  return r.status === 200 ? (r.json.modules[0].versions as Array<{ version: string }>).map((v) => v.version).sort() : [];
};

describe('terrace publish --all', () => {
  it('plans without publishing under --dry-run', async () => {
    const before = await registryCounts(t);
    const r = await terrace(['publish', '--all', repo, '--org', 'acme', '--dry-run', '--host', t.url, '--json'], { home });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.problems).toEqual([]);
    expect(out.plan).toEqual([
      { org: 'acme', name: 'dns-zone', provider: 'aws', version: '2.0.0', dir: 'modules/dns', tag: null, action: 'publish' },
      { org: 'acme', name: 'network', provider: 'aws', version: '1.1.0', dir: 'modules/network', tag: null, action: 'publish' },
      { org: 'acme', name: 'bucket', provider: 'google', version: '0.3.0', action: 'skip' },
    ]);
    expect(await registryCounts(t)).toEqual(before);
  });

  it('publishes every module that lacks its version and skips the ones that have it', async () => {
    const r = await terrace(['publish', '--all', repo, '--org', 'acme', '--host', t.url], { home });
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('acme/bucket/google 0.3.0: already published, skipped\n');
    expect(r.stdout).toMatch(/acme\/dns-zone\/aws 2\.0\.0: published \(\d+ bytes/);
    expect(r.stdout).toMatch(/acme\/network\/aws 1\.1\.0: published \(\d+ bytes/);
    expect(r.stdout.trim().split('\n').pop()).toBe('published 2, skipped 1, failed 0');
    expect(await versionsOf('acme/dns-zone/aws')).toEqual(['2.0.0']);
    expect(await versionsOf('acme/network/aws')).toEqual(['1.1.0']);
    // the skipped version kept its original archive
    expect((await archiveEntries(t, t.adminToken, 'acme/bucket/google', '0.3.0')).get('main.tf')!.content).toContain('value = 0');

    const again = await terrace(['publish', '--all', repo, '--org', 'acme', '--host', t.url], { home });
    expect(again.code).toBe(0);
    expect(again.stdout.trim().split('\n').pop()).toBe('published 0, skipped 3, failed 0');
  });

  it('reports modules without a usable version and exits 1, publishing the rest', async () => {
    const broken = tempDir('terrace-monorepo-bad-');
    writeTree(broken, {
      'a/terrace-module.json': '{"provider": "aws"}',
      'a/main.tf': 'output "a" {\n  value = 1\n}\n',
      'b/terrace-module.json': '{"provider": "aws", "version": "latest"}',
      'b/main.tf': 'output "b" {\n  value = 1\n}\n',
      'c/terrace-module.json': '{"provider": "aws", "version": "0.0.1"}',
      'c/main.tf': 'output "c" {\n  value = 1\n}\n',
    });
    const r = await terrace(['publish', '--all', broken, '--org', 'acme', '--host', t.url], { home });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: a: no version (set "version" in its marker file or write a VERSION file)');
    expect(r.stderr).toContain('error: b: version "latest" is not a semantic version');
    expect(r.stdout.trim().split('\n').pop()).toBe('published 1, skipped 0, failed 2');
    expect(await versionsOf('acme/c/aws')).toEqual(['0.0.1']);
    fs.rmSync(broken, { recursive: true, force: true });
  });

  it.runIf(hasCommand('git'))('takes versions from git tags, publishing each tag\'s own tree', async () => {
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=ci', '-c', 'user.email=ci@example.com', ...args], { cwd: mono, stdio: 'pipe' });
    const mono = tempDir('terrace-tags-');
    writeTree(mono, { 'modules/queue/main.tf': 'output "v" {\n  value = 1\n}\n', 'modules/cache/main.tf': 'output "v" {\n  value = 1\n}\n' });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'one');
    git('tag', 'queue/v1.0.0');
    git('tag', 'cache/v0.1.0');
    fs.writeFileSync(path.join(mono, 'modules/queue/main.tf'), 'output "v" {\n  value = 2\n}\n');
    git('commit', '-qam', 'two');
    git('tag', 'queue/v1.1.0');
    git('tag', 'unrelated-tag');

    const r = await terrace(['publish', '--all', mono, '--org', 'acme', '--pattern', 'modules/{name}', '--provider', 'gcp', '--version-from', 'tags', '--host', t.url], { home });
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n').pop()).toBe('published 3, skipped 0, failed 0');
    expect(await versionsOf('acme/queue/gcp')).toEqual(['1.0.0', '1.1.0']);
    expect(await versionsOf('acme/cache/gcp')).toEqual(['0.1.0']);
    expect((await archiveEntries(t, t.adminToken, 'acme/queue/gcp', '1.0.0')).get('main.tf')!.content).toContain('value = 1');
    expect((await archiveEntries(t, t.adminToken, 'acme/queue/gcp', '1.1.0')).get('main.tf')!.content).toContain('value = 2');
    fs.rmSync(mono, { recursive: true, force: true });
  });
});
