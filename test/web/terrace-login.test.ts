import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveCliLogin, chromiumAvailable } from '../helpers/browser.js';
import { BIN, terrace, writeTree } from '../helpers/cli.js';
import { accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

// The end to end: `terrace login` runs Terrace's own login.v1 (the browser step driven by
// Chromium, the command on a pseudo-terminal from `script`), then `terrace publish` uses the token
// it stored, and the version is served to Terraform's registry protocol.
const hasScript = spawnSync('script', ['--version']).status === 0;
const WAIT_MS = 60_000;

describe.runIf(chromiumAvailable && hasScript)('terrace login against Terrace', () => {
  let t: TestServer;
  let user: { id: string; token: string };
  const home = tempDir('terrace-login-home-');

  beforeAll(async () => {
    t = await startTestServer();
    await createOrg(t, 'acme');
    const publishers = await createTeam(t, t.adminToken, 'acme', 'publishers', { 'organization-access': { 'manage-modules': true } });
    user = await createUserWithToken(t, 'cli-user');
    await accept(t, user.token, await invite(t, t.adminToken, 'acme', 'cli-user', [publishers.id]));
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('stores a token the user approved in the browser; publish uses it', async () => {
    const cmd = `'${process.execPath}' '${BIN}' login ${t.url}`;
    const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { PATH: process.env.PATH, HOME: home, TERM: 'dumb' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`terrace login showed no URL: ${out}`)), WAIT_MS);
      const look = setInterval(() => {
        const m = /(http:\/\/127\.0\.0\.1:\d+\/app\/oauth\/authorize\?\S+)/.exec(out);
        if (m) {
          clearInterval(look);
          clearTimeout(timer);
          resolve(m[1]!);
        }
      }, 50);
    });
    expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');

    expect(await approveCliLogin(url, user.token)).toContain('Terrace login complete');
    const code = await Promise.race([exited, new Promise<number>((r) => setTimeout(() => r(-2), WAIT_MS))]);
    if (code === -2) child.kill();
    child.stdin.end();
    expect(code, out).toBe(0);
    expect(out).toContain('as cli-user');

    // A new token of the user's own, stored where Terraform reads it too.
    const host = new URL(t.url).host;
    const stored = JSON.parse(fs.readFileSync(path.join(home, '.terraform.d', 'credentials.tfrc.json'), 'utf8'));
    const token = stored.credentials[host].token as string;
    expect(token).not.toBe(user.token);
    expect((await t.api('GET', '/api/v2/account/details', { token })).json.data.id).toBe(user.id);

    const dir = writeTree(tempDir('terrace-login-mod-'), { 'main.tf': 'output "hello" {\n  value = "world"\n}\n' });
    // No host given: login made it the default.
    const pub = await terrace(['publish', dir, '--org', 'acme', '--name', 'hello', '--provider', 'null', '--version', '1.0.0', '--json'], { home });
    expect(pub.code, pub.stderr).toBe(0);
    const versions = await t.api('GET', '/v1/modules/acme/hello/null/versions', { token });
    expect(versions.json.modules[0].versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
  }, 150_000);
});
