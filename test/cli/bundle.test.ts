import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveEntries, registryCounts, terrace, writeTree } from '../helpers/cli.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { RFC3339 } from '../helpers/organizations.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

// Carrying modules across an air gap: export from one Terrace, import into a second one.
let source: TestServer;
let target: TestServer;
let home: string;
let work: string;

beforeAll(async () => {
  [source, target] = await Promise.all([startTestServer(), startTestServer()]);
  await createOrganization(source, 'acme');
  await createOrganization(source, 'other');
  await createOrganization(target, 'acme');
  for (const v of ['1.0.0', '1.2.0', '2.0.0-rc.1', '2.0.0']) {
    await publish(source, 'acme', 'network', 'aws', v, { 'main.tf': `output "v" {\n  value = "${v}"\n}\n`, 'modules/sub/main.tf': 'output "s" {\n  value = 1\n}\n' });
  }
  await publish(source, 'acme', 'dns', 'aws', '0.1.0', { 'main.tf': 'output "dns" {\n  value = 1\n}\n', 'README.md': '# DNS\n\nZones and records.\n' });
  await publish(source, 'other', 'skip', 'aws', '1.0.0');
  // One login file holds both hosts' tokens; --host picks the host.
  home = writeTree(tempDir('terrace-home-'), {
    '.terraform.d/credentials.tfrc.json': JSON.stringify({
      credentials: { [new URL(source.url).host]: { token: source.adminToken }, [new URL(target.url).host]: { token: target.adminToken } },
    }),
  });
  work = tempDir('terrace-bundles-');
});
afterAll(async () => {
  await Promise.all([source.close(), target.close()]);
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(work, { recursive: true, force: true });
});

const tarList = (file: string) => execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n');

async function versionAttrs(t: TestServer, addr: string, v: string) {
  const [org, name, provider] = addr.split('/');
  const r = await t.api('GET', `/api/v2/organizations/${org}/registry-modules/private/${org}/${name}/${provider}/version?module_version=${v}`);
  return r.json?.data?.attributes;
}

/** Rewrites one member of a bundle (tar) with new content; answers the new bundle's path. */
function tamper(bundle: string, member: string, change: (b: Buffer) => Buffer, name: string): string {
  const dir = fs.mkdtempSync(path.join(work, 'tamper-'));
  execFileSync('tar', ['-xf', bundle, '-C', dir]);
  fs.writeFileSync(path.join(dir, member), change(fs.readFileSync(path.join(dir, member))));
  const out = path.join(work, name);
  execFileSync('tar', ['-cf', out, '-C', dir, ...tarList(bundle)]);
  return out;
}

describe('terrace bundle', () => {
  let bundle: string;

  it('exports the chosen modules and versions with their archives, metadata and checksums', async () => {
    bundle = path.join(work, 'acme.bundle');
    const r = await terrace(['bundle', 'export', bundle, '--org', 'acme', '--version', '>= 1.0.0, < 3.0.0', '--module', 'network', '--module', 'dns/aws', '--host', source.url, '--json'], { home });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ file: bundle, modules: 1, versions: 3, bytes: fs.statSync(bundle).size });
    // dns 0.1.0 is outside the constraint; 2.0.0-rc.1 is a pre-release the constraint does not name
    expect(tarList(bundle)).toEqual([
      'manifest.json', 'manifest.json.sha256',
      'archives/acme/network/aws/1.0.0.tar.gz', 'archives/acme/network/aws/1.2.0.tar.gz', 'archives/acme/network/aws/2.0.0.tar.gz',
    ]);
    const manifestText = execFileSync('tar', ['-xOf', bundle, 'manifest.json']);
    expect(execFileSync('tar', ['-xOf', bundle, 'manifest.json.sha256'], { encoding: 'utf8' })).toBe(`${crypto.createHash('sha256').update(manifestText).digest('hex')}  manifest.json\n`);
    const manifest = JSON.parse(manifestText.toString('utf8'));
    expect(manifest).toMatchObject({ format: 'terrace-bundle', 'format-version': 1, 'created-at': expect.stringMatching(RFC3339), source: new URL(source.url).host });
    const v12 = manifest.modules[0].versions[1];
    const stored = await versionAttrs(source, 'acme/network/aws', '1.2.0');
    expect(v12).toEqual({ version: '1.2.0', description: null, 'commit-sha': null, 'published-at': stored['published-at'], size: stored.size, sha256: stored.sha256, archive: 'archives/acme/network/aws/1.2.0.tar.gz' });
    const archive = execFileSync('tar', ['-xOf', bundle, v12.archive]);
    expect(crypto.createHash('sha256').update(archive).digest('hex')).toBe(stored.sha256);
  });

  it('refuses a bundle with a changed archive, and publishes nothing from it', async () => {
    const bad = tamper(bundle, 'archives/acme/network/aws/2.0.0.tar.gz', (b) => Buffer.concat([b, Buffer.from([0])]), 'changed-archive.bundle');
    const before = await registryCounts(target);
    const r = await terrace(['bundle', 'import', bad, '--host', target.url], { home });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: ${bad} failed verification, so nothing was imported:\n  acme/network/aws 2.0.0: archives/acme/network/aws/2.0.0.tar.gz does not match its sha256 in the manifest\n` +
        'hint: the bundle was changed or damaged after export: export it again\n',
    );
    expect(await registryCounts(target)).toEqual(before);
    expect(before).toEqual({ modules: 0, versions: 0, blobs: 0 });
  });

  it('refuses a bundle whose manifest was edited, or that holds an archive its manifest does not list', async () => {
    const bad = tamper(bundle, 'manifest.json', (b) => Buffer.from(b.toString('utf8').replace('"1.0.0"', '"1.0.1"')), 'changed-manifest.bundle');
    const r = await terrace(['bundle', 'verify', bad], { home });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('  manifest.json does not match its checksum in manifest.json.sha256\n');
    const extra = path.join(work, 'extra.bundle');
    fs.copyFileSync(bundle, extra);
    const dir = fs.mkdtempSync(path.join(work, 'extra-'));
    writeTree(dir, { 'archives/acme/evil/aws/1.0.0.tar.gz': 'not listed' });
    execFileSync('tar', ['-rf', extra, '-C', dir, 'archives/acme/evil/aws/1.0.0.tar.gz']);
    const r2 = await terrace(['bundle', 'import', extra, '--host', target.url], { home });
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain('  archives/acme/evil/aws/1.0.0.tar.gz is in the bundle but not in its manifest\n');
    expect(await registryCounts(target)).toEqual({ modules: 0, versions: 0, blobs: 0 });
  });

  it('imports into a second Terrace exactly what was exported, then skips it on a second import', async () => {
    const r = await terrace(['bundle', 'import', bundle, '--host', target.url], { home });
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n').pop()).toBe('imported 3, skipped 0, failed 0');
    for (const v of ['1.0.0', '1.2.0', '2.0.0']) {
      const [a, b] = [await versionAttrs(source, 'acme/network/aws', v), await versionAttrs(target, 'acme/network/aws', v)];
      expect(b).toMatchObject({ status: 'ok', sha256: a.sha256, size: a.size });
    }
    const versions = await target.api('GET', '/v1/modules/acme/network/aws/versions');
    expect(versions.json.modules[0].versions.map((v: { version: string }) => v.version).sort()).toEqual(['1.0.0', '1.2.0', '2.0.0']);
    // installable: the registry protocol hands out the same bytes Terraform would unpack
    expect((await archiveEntries(target, target.adminToken, 'acme/network/aws', '2.0.0')).get('main.tf')!.content).toContain('"2.0.0"');
    const latest = await target.api('GET', '/v1/modules/acme/network/aws');
    expect(latest.json.version).toBe('2.0.0');

    const before = await registryCounts(target);
    const again = await terrace(['bundle', 'import', bundle, '--host', target.url], { home });
    expect(again.code).toBe(0);
    expect(again.stdout.trim().split('\n').pop()).toBe('imported 0, skipped 3, failed 0');
    expect(await registryCounts(target)).toEqual(before);
  });

  it('exports nothing, and says so, when nothing matches', async () => {
    const file = path.join(work, 'empty.bundle');
    const r = await terrace(['bundle', 'export', file, '--org', 'acme', '--version', '~> 9.0', '--host', source.url], { home });
    expect(r.code).toBe(4);
    expect(r.stderr).toBe('error: nothing matched: no published versions to export\nhint: check --org, --module and --version\n');
    expect(fs.existsSync(file)).toBe(false);
  });
});

describe('the archive URL bundle export fetches from X-Terraform-Get', () => {
  it("drops go-getter's own parameters (checksum, archive) and keeps every other query byte as signed", async () => {
    const { getterUrl } = await import('../../src/cli/bundle.js');
    const signed = 'X-Amz-Credential=S3RVER%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&response-content-disposition=attachment%3Bfilename%3D%22m.tar.gz%22&X-Amz-Signature=ab12';
    const got = getterUrl(new URL(`https://s3.example.com/b/k.tar.gz?${signed}&checksum=sha256:${'0'.repeat(64)}&archive=tgz`));
    expect(got.toString()).toBe(`https://s3.example.com/b/k.tar.gz?${signed}`);
    expect(getterUrl(new URL(`https://t.example.com/archives/v/1.s/m.tar.gz?checksum=sha256:${'0'.repeat(64)}`)).toString()).toBe('https://t.example.com/archives/v/1.s/m.tar.gz');
  });
});
