import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveEntries, hasCommand, homeWithToken, registryCounts, terrace, writeTree, BIN } from '../helpers/cli.js';
import { createOrganization } from '../helpers/registry.js';
import { RFC3339 } from '../helpers/organizations.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

// `terrace publish <dir>` against a real server: what gets packed, what is refused, what is printed.
let t: TestServer;
let home: string;
let work: string;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_MAX_ARCHIVE_BYTES: '4096' });
  await createOrganization(t, 'acme');
  home = homeWithToken(t, t.adminToken);
  work = tempDir('terrace-cli-publish-');
});
afterAll(async () => {
  await t.close();
  fs.rmSync(work, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

const MAIN = 'variable "cidr" {\n  default = "10.0.0.0/16"\n}\noutput "cidr" {\n  value = var.cidr\n}\n';

function moduleDir(name: string, extra: Record<string, string> = {}): string {
  return writeTree(path.join(work, name), { 'main.tf': MAIN, ...extra });
}

describe('terrace publish <dir>', () => {
  it('packs as Terraform does: .terraformignore honoured, .git and .terraform left out, inner links kept', async () => {
    const dir = moduleDir('terraform-aws-network', {
      'README.md': '# Network\n\nA VPC and its subnets.\n',
      'modules/child/main.tf': 'output "ok" {\n  value = true\n}\n',
      '.terraformignore': '# local only\n*.tfvars\nscratch/\n!keep.tfvars\n',
      'prod.tfvars': 'secret = 1\n',
      'keep.tfvars': 'kept = 1\n',
      'scratch/notes.txt': 'x\n',
      '.git/config': '[core]\n',
      '.terraform/providers/p': 'binary\n',
      '.terraform/modules/modules.json': '{}\n',
    });
    fs.symlinkSync('main.tf', path.join(dir, 'alias.tf'));
    fs.symlinkSync(path.join(dir, 'modules', 'child'), path.join(dir, 'child-link'));

    const r = await terrace(['publish', dir, '--org', 'acme', '--version', 'v1.0.0', '--host', t.url], { home });
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    const host = new URL(t.url).host;
    expect(r.stdout).toMatch(/^acme\/network\/aws 1\.0\.0: published \(\d+ bytes, sha256 [0-9a-f]{64}\)\n/);
    expect(r.stdout.split('\n').slice(2, 6)).toEqual(['module "network" {', `  source  = "${host}/acme/network/aws"`, '  version = "1.0.0"', '}']);

    const entries = await archiveEntries(t, t.adminToken, 'acme/network/aws', '1.0.0');
    expect([...entries.keys()].sort()).toEqual(
      ['.terraform', '.terraform/modules', '.terraform/modules/modules.json', '.terraformignore', 'README.md', 'alias.tf', 'child-link', 'keep.tfvars', 'main.tf', 'modules', 'modules/child', 'modules/child/main.tf', 'scratch'].filter(
        // the excluded directories' own entries are left out; only .terraform/modules is re-included
        (e) => !['.terraform', 'scratch'].includes(e),
      ),
    );
    expect(entries.get('alias.tf')).toMatchObject({ type: 'SymbolicLink', linkpath: 'main.tf' });
    // an absolute link inside the module is stored relative, so it still resolves after install
    expect(entries.get('child-link')).toMatchObject({ type: 'SymbolicLink', linkpath: 'modules/child' });
    expect(entries.get('main.tf')!.content).toBe(MAIN);
    const v = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/network/aws/version?module_version=1.0.0');
    expect(v.json.data.attributes.status).toBe('ok');
    expect(v.json.data.attributes.description).toBe('A VPC and its subnets.');
  });

  it('refuses a link that leaves the directory, before creating anything', async () => {
    const outside = writeTree(path.join(work, 'outside'), { 'secret.txt': 'no\n' });
    const dir = moduleDir('leaky');
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'secret.txt'));
    const before = await registryCounts(t);
    const r = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '1.0.0', '--host', t.url], { home });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error: secret.txt is a link to ${path.join(outside, 'secret.txt')}, outside the module directory`);
    expect(r.stderr).toContain('hint: replace the link with a copy of what it points to, or leave it out in .terraformignore');
    expect(await registryCounts(t)).toEqual(before);
    expect((await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/leaky/aws')).status).toBe(404);
  });

  it('publishes a version once: the second attempt fails and changes nothing', async () => {
    const dir = moduleDir('dns');
    const first = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '2.0.0', '--host', t.url, '--json'], { home });
    expect(first.code).toBe(0);
    const result = JSON.parse(first.stdout);
    expect(result).toEqual({
      namespace: 'acme', name: 'dns', provider: 'aws', version: '2.0.0', status: 'ok', error: null,
      size: expect.any(Number), sha256: expect.stringMatching(/^[0-9a-f]{64}$/), source: `${new URL(t.url).host}/acme/dns/aws`, warnings: [],
    });
    expect(first.stderr).toBe('');
    const before = await registryCounts(t);
    const again = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '2.0.0', '--host', t.url], { home });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('error: creating version acme/dns/aws 2.0.0: version 2.0.0 of acme/dns/aws already exists (status ok); publish a new version instead');
    expect(await registryCounts(t)).toEqual(before);
  });

  it('prints the server\'s reason when it refuses the archive, and exits 1', async () => {
    const dir = moduleDir('big', { 'blob.bin': crypto.randomBytes(8192).toString('base64') });
    const r = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '1.0.0', '--host', t.url], { home });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: acme/big/aws 1.0.0: publishing failed: the archive is');
    expect(r.stderr).toContain('over the limit of 4096 bytes (TERRACE_MAX_ARCHIVE_BYTES)');
    const v = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/big/aws/version?module_version=1.0.0');
    expect(v.json.data.attributes.status).toBe('errored');
  });

  it('refuses bad command lines with exit code 2 and says what to do', async () => {
    const dir = moduleDir('usage');
    const before = await registryCounts(t);
    const noVersion = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--host', t.url], { home });
    expect(noVersion).toMatchObject({ code: 2, stderr: 'error: --version is required\nhint: for example --version 1.0.0\n' });
    const badVersion = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '1.0', '--host', t.url], { home });
    expect(badVersion).toMatchObject({ code: 2, stderr: 'error: "1.0" is not a semantic version\nhint: for example 1.2.0 or v1.2.0-rc.1\n' });
    const unknown = await terrace(['publish', dir, '--org', 'acme', '--colour'], { home });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("error: Unknown option '--colour'");
    expect(unknown.stderr).toContain('hint: run `terrace publish --help`');
    const missingOrg = await terrace(['publish', dir, '--org', 'nowhere', '--provider', 'aws', '--version', '1.0.0', '--host', t.url], { home });
    expect(missingOrg.code).toBe(4);
    expect(missingOrg.stderr).toBe(
      `error: creating module nowhere/usage/aws: organization nowhere does not exist on ${new URL(t.url).host}, or your token may not publish in it\n` +
        'hint: check the name; an owner can create it with `terrace orgs create nowhere --email <address>` or give you a team with manage-modules\n',
    );
    expect(await registryCounts(t)).toEqual(before);
  });
});

describe('upload progress', () => {
  it('prints plain progress lines when stderr is not a terminal', async () => {
    const dir = moduleDir('plain');
    const r = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '1.0.0', '--host', t.url], { home });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('\r');
    expect(r.stderr).toMatch(/^uploading acme\/plain\/aws 1\.0\.0: uploaded 0% \(0 of (\d+) bytes\)\nuploading acme\/plain\/aws 1\.0\.0: uploaded 100% \(\1 of \1 bytes\)\n$/);
  });

  it.runIf(hasCommand('script', ['--version']))('draws a bar in place under a pseudo-terminal', async () => {
    const dir = moduleDir('tty');
    const cmd = [process.execPath, BIN, 'publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '1.0.0', '--host', t.url].map((a) => `'${a}'`).join(' ');
    const { spawn } = await import('node:child_process');
    const out = await new Promise<{ code: number; text: string }>((resolve) => {
      const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { PATH: process.env.PATH, HOME: home, TERM: 'xterm' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (c) => (text += c));
      child.on('close', (code) => resolve({ code: code ?? -1, text }));
    });
    expect(out.code).toBe(0);
    expect(out.text).toContain('\r\x1b[2Kuploading acme/tty/aws 1.0.0 [------------------------------]   0%');
    expect(out.text).toMatch(/\r\x1b\[2Kuploading acme\/tty\/aws 1\.0\.0 \[#{30}\] 100% [\d.]+ (B|KiB)\/[\d.]+ (B|KiB)\r?\n/);
    expect(out.text).not.toContain('uploaded 0%');
  });
});

describe('transient failures', () => {
  let flaky: TestServer;
  let proxy: http.Server;
  const seen: string[] = [];

  beforeAll(async () => {
    // A proxy in front of Terrace that answers the first upload with 503, as a load balancer
    // does while a backend restarts; Terrace hands out upload URLs on the proxy's address.
    let target = '';
    let failed = false;
    proxy = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url!.replace(/\/uploads\/modules\/.*/, '/uploads/modules/…')}`);
      if (req.method === 'PUT' && req.url!.startsWith('/uploads/') && !failed) {
        failed = true;
        req.resume();
        req.on('end', () => res.writeHead(503, { 'Content-Type': 'text/plain' }).end('backend restarting'));
        return;
      }
      const up = http.request(new URL(req.url!, target), { method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    flaky = await startTestServer({ TERRACE_PUBLIC_URL: proxyUrl });
    target = flaky.url;
    await createOrganization(flaky, 'acme');
  });
  afterAll(async () => {
    await flaky.close();
    proxy.close();
  });

  it('retries an upload the server could not take, on the same upload URL', async () => {
    const dir = moduleDir('retry');
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const r = await terrace(['publish', dir, '--org', 'acme', '--provider', 'aws', '--version', '1.0.0', '--host', proxyUrl], { home: homeWithToken({ url: proxyUrl } as TestServer, flaky.adminToken) });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('acme/retry/aws 1.0.0: upload failed (HTTP 503); retrying');
    expect(seen.filter((s) => s.startsWith('PUT'))).toEqual(['PUT /uploads/modules/…', 'PUT /uploads/modules/…']);
    const v = await flaky.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/retry/aws/version?module_version=1.0.0');
    expect(v.json.data.attributes).toMatchObject({ status: 'ok', 'published-at': expect.stringMatching(RFC3339) });
  });
});
