import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveCliLogin, chromiumAvailable } from '../helpers/browser.js';
import { addMember, createOrganization, publish } from '../helpers/registry.js';
import { createUserWithToken, tempDir, type TestServer } from '../helpers/server.js';
import { startTlsServer, terraform, terraformAvailable, withoutTlsVerification } from '../helpers/terraform.js';

// The real `terraform login` against Terrace over HTTPS, its browser step driven by Chromium,
// then `terraform init` with the token it stored. Skipped without terraform, openssl or chromium.
const available = chromiumAvailable && terraformAvailable;
const HOST = 'registry.terrace.test';
const WAIT_MS = 60_000;

describe.runIf(available)('terraform login', () => {
  let t: TestServer;
  let user: { id: string; token: string };
  const dir = tempDir('terrace-tflogin-');
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const started = await startTlsServer(dir, HOST, { TERRACE_JOBS: 'false' });
    t = started.server;
    const certFile = started.cert;
    await withoutTlsVerification(async () => {
      await createOrganization(t, 'acme');
      await publish(t, 'acme', 'network', 'aws', '1.0.0', { 'main.tf': 'output "cidr" {\n  value = "10.0.0.0/16"\n}\n' });
      user = await createUserWithToken(t, 'tf-user');
      await addMember(t, 'acme', { username: 'tf-user', token: user.token });
    });
    // Terraform treats only dotted hosts as registries: the CLI config points HOST's services at
    // the local listener, login.v1 as Terrace's discovery document declares it. No credentials:
    // terraform login is what provides them.
    const login = (await withoutTlsVerification(async () => (await fetch(`${t.url}/.well-known/terraform.json`)).json())) as { 'login.v1': { client: string; authz: string; token: string; ports: number[] } };
    // The default CLI config file, not TF_CLI_CONFIG_FILE: with that set, Terraform ignores the
    // credentials.tfrc.json terraform login writes.
    const cliConfig = path.join(dir, '.terraformrc');
    fs.writeFileSync(
      cliConfig,
      `host "${HOST}" {\n  services = {\n    "modules.v1" = "${t.url}/v1/modules/"\n    "login.v1" = {\n      client = "${login['login.v1'].client}"\n      grant_types = ["authz_code"]\n      authz = "${t.url}${login['login.v1'].authz}"\n      token = "${t.url}${login['login.v1'].token}"\n      ports = [${login['login.v1'].ports.join(', ')}]\n    }\n  }\n}\n`,
    );
    // Terraform opens the login page with $BROWSER (through xdg-open) when it can; the URL is also printed.
    const browserScript = path.join(dir, 'browser.sh');
    fs.writeFileSync(browserScript, `#!/bin/sh\nprintf '%s\\n' "$1" >> "${path.join(dir, 'opened')}"\n`, { mode: 0o755 });
    // Where terraform login writes credentials.tfrc.json (it does not create the directory).
    fs.mkdirSync(path.join(dir, '.terraform.d'));
    env = { PATH: process.env.PATH, HOME: dir, SSL_CERT_FILE: certFile, CHECKPOINT_DISABLE: '1', BROWSER: browserScript };
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stores a token the user approved in the browser, and terraform init uses it', async () => {
    const proc = spawn('terraform', ['login', '-no-color', HOST], { env, cwd: dir });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number>((resolve) => proc.on('close', (code) => resolve(code ?? -1)));
    proc.stdin.write('yes\n');

    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`terraform login showed no URL: ${out}`)), WAIT_MS);
      const look = setInterval(() => {
        const m = /(https:\/\/\S+\/app\/oauth\/authorize\?\S+)/.exec(out);
        if (m) {
          clearInterval(look);
          clearTimeout(timer);
          resolve(m[1]!);
        }
      }, 50);
    });
    const query = new URL(url).searchParams;
    expect(query.get('client_id')).toBe('terraform-cli');
    expect(query.get('code_challenge_method')).toBe('S256');
    expect(query.get('redirect_uri')).toMatch(/^http:\/\/localhost:100(0\d|10)\/login$/);

    await approveCliLogin(url, user.token);
    const code = await Promise.race([exited, new Promise<number>((r) => setTimeout(() => r(-2), WAIT_MS))]);
    if (code === -2) proc.kill();
    expect(code, out).toBe(0);

    const stored = JSON.parse(fs.readFileSync(path.join(dir, '.terraform.d', 'credentials.tfrc.json'), 'utf8'));
    const token = stored.credentials[HOST].token as string;
    expect(token).not.toBe(user.token);
    const me = await withoutTlsVerification(() => t.api('GET', '/api/v2/account/details', { token }));
    expect(me.json.data.id).toBe(user.id);

    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    fs.writeFileSync(path.join(work, 'main.tf'), `module "net" {\n  source  = "${HOST}/acme/network/aws"\n  version = "~> 1.0"\n}\n`);
    const init = await terraform(['init', '-input=false', '-no-color'], work, { ...env, TF_IN_AUTOMATION: '1' });
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(work, '.terraform/modules/modules.json'), 'utf8')).Modules.some((m: { Version?: string }) => m.Version === '1.0.0')).toBe(true);
  }, 150_000);
});
