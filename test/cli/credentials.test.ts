import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, hasCommand, terrace, writeTree } from '../helpers/cli.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

// Every place Terraform reads a token from, read by terrace the same way.
let t: TestServer;
let alice: { token: string };
let hostPort: string;
const REGISTRY = 'my-registry.terrace.test';

beforeAll(async () => {
  t = await startTestServer();
  alice = await createUserWithToken(t, 'alice');
  hostPort = new URL(t.url).host;
});
afterAll(async () => {
  await t.close();
});

/** A HOME whose Terraform configuration directory maps REGISTRY's services to the test server. */
function homeWithHostBlock(extra: Record<string, string> = {}): string {
  return writeTree(tempDir('terrace-home-'), {
    '.terraform.d/hosts.tfrc': `# services for a dotted name, as Terraform's host blocks give them\nhost "${REGISTRY}" {\n  services = {\n    "modules.v1" = "${t.url}/v1/modules/",\n    "tfe.v2" = "${t.url}/api/v2/"\n  }\n}\n`,
    ...extra,
  });
}

const whoami = (home: string, env: Record<string, string> = {}, host = REGISTRY) => terrace(['whoami', '--host', host, '--json'], { home, env });

describe('credentials', () => {
  it('reads TF_TOKEN_<host>, with "_" for "." and "__" for "-"', async () => {
    const r = await whoami(homeWithHostBlock(), { TF_TOKEN_my__registry_terrace_test: alice.token });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      host: REGISTRY, id: expect.stringMatching(/^user-/), username: 'alice', email: 'alice@example.com', 'is-site-admin': false,
      'token-source': `the TF_TOKEN_ environment variable for ${REGISTRY}`,
    });
  });

  it('reads a credentials block in the CLI configuration file (TF_CLI_CONFIG_FILE), for a host with a port', async () => {
    const home = tempDir('terrace-home-');
    const rc = path.join(home, 'custom.tfrc');
    fs.writeFileSync(rc, `plugin_cache_dir = "/tmp/plugins"\n/* HCL 1, as Terraform reads it */\ncredentials "${hostPort}" {\n  token = "${alice.token}"\n}\nprovider_installation {\n  direct {\n    exclude = ["example.com/*/*"]\n  }\n}\n`);
    const r = await terrace(['whoami', '--host', t.url], { home, env: { TF_CLI_CONFIG_FILE: rc } });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`alice (${(await t.api('GET', '/api/v2/users/alice')).json.data.id}) on ${hostPort}\ntoken from ${rc}\n`);
  });

  it('reads credentials.tfrc.json, and the environment wins over files as in Terraform', async () => {
    const home = homeWithHostBlock({ '.terraform.d/credentials.tfrc.json': JSON.stringify({ credentials: { [REGISTRY.toUpperCase()]: { token: t.adminToken } } }) });
    const fromFile = await whoami(home);
    expect(fromFile.code).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toMatchObject({ username: 'admin', 'token-source': path.join(home, '.terraform.d', 'credentials.tfrc.json') });
    const fromEnv = await whoami(home, { TF_TOKEN_my__registry_terrace_test: alice.token });
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ username: 'alice' });
  });

  it('ignores credentials.tfrc.json while TF_CLI_CONFIG_FILE is set, as Terraform does', async () => {
    const home = writeTree(tempDir('terrace-home-'), { '.terraform.d/credentials.tfrc.json': JSON.stringify({ credentials: { [hostPort]: { token: alice.token } } }) });
    const r = await terrace(['whoami', '--host', t.url], { home, env: { TF_CLI_CONFIG_FILE: path.join(home, 'missing.tfrc') } });
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      `warning: the CLI configuration file ${path.join(home, 'missing.tfrc')} (TF_CLI_CONFIG_FILE) does not exist\n` +
        `error: reading your account: ${hostPort} needs a token and none is configured\nhint: run \`terrace login ${hostPort}\`\n`,
    );
  });

  it('says where a rejected token came from, with exit code 3', async () => {
    const r = await whoami(homeWithHostBlock(), { TF_TOKEN_my__registry_terrace_test: 'nope.terrace.nope' });
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout)).toEqual({
      error: {
        message: `reading your account: ${REGISTRY} rejected the token from the TF_TOKEN_ environment variable for ${REGISTRY} (401)`,
        hint: `the token is invalid or expired: run \`terrace login ${REGISTRY}\` again`,
        'exit-code': 3,
      },
    });
  });

  it('asks for a host when none is known', async () => {
    const r = await terrace(['whoami'], { home: tempDir('terrace-home-') });
    expect(r).toMatchObject({ code: 2, stderr: 'error: no Terrace host given\nhint: pass --host <host>, set TERRACE_HOST, or run `terrace login <host>` once\n' });
  });
});

describe('terrace login', () => {
  it('checks the token, stores it in credentials.tfrc.json as terraform login does, and remembers the host', async () => {
    const home = homeWithHostBlock({ '.terraform.d/credentials.tfrc.json': JSON.stringify({ credentials: { 'other.example.com': { token: 'kept' } } }) });
    const r = await terrace(['login', REGISTRY], { home, input: `${alice.token}\n` });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const file = path.join(home, '.terraform.d', 'credentials.tfrc.json');
    expect(r.stdout).toBe(`Logged in to ${REGISTRY} as alice; the token is stored in ${file}.\n`);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ credentials: { 'other.example.com': { token: 'kept' }, [REGISTRY]: { token: alice.token } } });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // later commands need no --host and find the stored token
    const me = await terrace(['whoami', '--json'], { home });
    expect(JSON.parse(me.stdout)).toMatchObject({ host: REGISTRY, username: 'alice', 'token-source': file });

    const out = await terrace(['logout'], { home });
    expect(out.code).toBe(0);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ credentials: { 'other.example.com': { token: 'kept' } } });
  });

  it('stores nothing when the server rejects the token', async () => {
    const home = homeWithHostBlock();
    const r = await terrace(['login', REGISTRY], { home, input: 'wrong.terrace.token\n' });
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(`error: checking the token with ${REGISTRY}: ${REGISTRY} rejected the token from the token given (401)\nhint: the token is invalid or expired: run \`terrace login ${REGISTRY}\` again\n`);
    expect(fs.existsSync(path.join(home, '.terraform.d', 'credentials.tfrc.json'))).toBe(false);
    expect(fs.existsSync(path.join(home, '.config', 'terrace', 'settings.json'))).toBe(false);
  });

  it('refuses to overwrite a token set in another configuration file', async () => {
    const home = homeWithHostBlock({ '.terraform.d/team.tfrc': `credentials "${REGISTRY}" {\n  token = "${alice.token}"\n}\n` });
    const r = await terrace(['login', REGISTRY], { home, input: `${t.adminToken}\n` });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error: credentials for ${REGISTRY} are set in ${path.join(home, '.terraform.d', 'team.tfrc')}, which Terrace (like Terraform) does not edit`);
    expect(fs.existsSync(path.join(home, '.terraform.d', 'credentials.tfrc.json'))).toBe(false);
  });
});

describe.runIf(hasCommand('script', ['--version']))('terrace login with login.v1', () => {
  // The authorization server side of Terraform's login.v1 protocol (OAuth 2 authorization code
  // with PKCE), as Terrace will offer it: it checks what the command sends and answers a token.
  let oauth: http.Server;
  let oauthUrl: string;
  const seen: Record<string, string>[] = [];
  let challenge = '';

  beforeAll(async () => {
    oauth = http.createServer((req, res) => {
      const u = new URL(req.url!, 'http://x');
      if (req.method === 'GET' && u.pathname === '/authorize') {
        const q = Object.fromEntries(u.searchParams);
        seen.push(q);
        challenge = q.code_challenge!;
        const back = new URL(q.redirect_uri!);
        back.search = new URLSearchParams({ code: 'the-code', state: q.state! }).toString();
        return void res.writeHead(302, { Location: back.href }).end();
      }
      if (req.method === 'POST' && u.pathname === '/token') {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          const f = Object.fromEntries(new URLSearchParams(body));
          seen.push(f);
          const ok = f.grant_type === 'authorization_code' && f.code === 'the-code' && f.client_id === 'terraform-cli' &&
            crypto.createHash('sha256').update(f.code_verifier!).digest('base64url') === challenge;
          res.writeHead(ok ? 200 : 400, { 'Content-Type': 'application/json' }).end(JSON.stringify(ok ? { access_token: alice.token, token_type: 'bearer' } : { error: 'invalid_grant' }));
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => oauth.listen(0, '127.0.0.1', resolve));
    oauthUrl = `http://127.0.0.1:${(oauth.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    oauth.close();
  });

  it('runs the browser flow on a terminal and stores the token it gets', async () => {
    const free = await new Promise<number>((resolve) => {
      const s = http.createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const home = writeTree(tempDir('terrace-home-'), {
      '.terraform.d/hosts.tfrc': `host "${REGISTRY}" {\n  services = {\n    "tfe.v2" = "${t.url}/api/v2/"\n    "modules.v1" = "${t.url}/v1/modules/"\n    "login.v1" = {\n      client = "terraform-cli"\n      grant_types = ["authz_code"]\n      authz = "${oauthUrl}/authorize"\n      token = "${oauthUrl}/token"\n      ports = [${free}, ${free}]\n    }\n  }\n}\n`,
    });
    const cmd = `'${process.execPath}' '${BIN}' login ${REGISTRY}`;
    const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { PATH: process.env.PATH, HOME: home, TERM: 'dumb' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
    // Play the browser: open the printed URL and follow the redirect back to the command.
    const url = await new Promise<string>((resolve) => {
      child.stdout.on('data', (c) => {
        out += c;
        const m = /(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
    });
    const authz = await fetch(url, { redirect: 'manual' });
    expect(authz.status).toBe(302);
    const back = await fetch(authz.headers.get('location')!);
    expect(back.status).toBe(200);
    expect(await back.text()).toContain('Terrace login complete');
    const code = await exited;
    child.stdin.end();
    expect(code, out).toBe(0);
    expect(seen[0]).toMatchObject({ response_type: 'code', client_id: 'terraform-cli', redirect_uri: `http://localhost:${free}/login`, code_challenge_method: 'S256' });
    expect(seen[1]).toMatchObject({ grant_type: 'authorization_code', code: 'the-code', redirect_uri: `http://localhost:${free}/login` });
    expect(out).toContain(`Logged in to ${REGISTRY} as alice`);
    expect(JSON.parse(fs.readFileSync(path.join(home, '.terraform.d', 'credentials.tfrc.json'), 'utf8'))).toEqual({ credentials: { [REGISTRY]: { token: alice.token } } });
  });
});
