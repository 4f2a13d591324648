// `terrace login`, `logout` and `whoami`. login runs Terraform's login.v1 OAuth flow when the host
// offers it; otherwise it does what `terraform login` does without it: ask for a token, check it
// against /account/details, and store it in credentials.tfrc.json for both tools.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Api, chooseHost, discover, fetchRetrying, parseHost, writeDefaultHost, type Target } from './client.js';
import { type Command, type Ctx } from './command.js';
import { CliError, EXIT } from './errors.js';
import { loadCliConfig, storeCredentials, type Env } from './tfconfig.js';
import { prompt } from './ui.js';

interface LoginV1 { client: string; grant_types?: string[]; authz: string; token: string; ports?: [number, number] }

const b64url = (b: Buffer) => b.toString('base64url');

/** Listens on the first free port of the host's range, for the browser's redirect. */
async function listenInRange(server: http.Server, ports: [number, number]): Promise<number> {
  for (let port = ports[0]; port <= ports[1]; port++) {
    const ok = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) return (server.address() as AddressInfo).port;
  }
  throw new CliError(`no free local port in ${ports[0]}-${ports[1]} for the login redirect`, EXIT.failed, 'close what listens there, or log in with a token');
}

/** The authorization code grant with PKCE (RFC 7636), as `terraform login` runs it. */
async function oauthLogin(ctx: Ctx, target: Target, login: LoginV1): Promise<string> {
  const base = target.base;
  const verifier = b64url(randomBytes(32));
  const state = b64url(randomBytes(16));
  const server = http.createServer();
  const port = await listenInRange(server, login.ports ?? [10000, 10010]);
  const redirect = `http://localhost:${port}/login`;
  try {
    const code = await new Promise<string>((resolve, reject) => {
      server.on('request', (req, res) => {
        const u = new URL(req.url ?? '/', redirect);
        if (u.pathname !== '/login') return void res.writeHead(404).end();
        const fail = u.searchParams.get('error');
        if (u.searchParams.get('state') !== state || (!u.searchParams.get('code') && !fail)) {
          res.writeHead(400, { 'Content-Type': 'text/plain' }).end('Unexpected login response; return to the terminal.');
          return reject(new CliError('the login response did not match this login attempt', EXIT.auth, 'run `terrace login` again'));
        }
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end(fail ? `Login failed: ${fail}` : 'Terrace login complete: you can close this window and return to the terminal.');
        if (fail) reject(new CliError(`the server refused the login: ${fail} ${u.searchParams.get('error_description') ?? ''}`.trim(), EXIT.auth));
        else resolve(u.searchParams.get('code')!);
      });
      const authz = new URL(login.authz, base);
      authz.search = new URLSearchParams({
        response_type: 'code',
        client_id: login.client,
        redirect_uri: redirect,
        state,
        code_challenge: b64url(createHash('sha256').update(verifier).digest()),
        code_challenge_method: 'S256',
      }).toString();
      ctx.err(`Open this URL in a browser to log in to ${target.host}:\n\n    ${authz.href}\n`);
      ctx.err('Waiting for the browser…');
    });
    const res = await fetchRetrying(new URL(login.token, base), {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: login.client, code_verifier: verifier, redirect_uri: redirect }).toString(),
    }, { idempotent: false });
    const body = (await res.json().catch(() => ({}))) as { access_token?: string; error?: string };
    if (res.status !== 200 || !body.access_token) throw new CliError(`the token endpoint refused the code: ${body.error ?? `HTTP ${res.status}`}`, EXIT.auth, 'run `terrace login` again');
    return body.access_token;
  } finally {
    server.close();
  }
}

async function verify(env: Env, target: Target, token: string): Promise<{ username: string; email?: string; siteAdmin: boolean }> {
  const api = new Api(env, target, token, 'the token given');
  const res = await api.api('GET', 'account/details', undefined, `checking the token with ${target.host}`);
  const a = res.json?.data?.attributes ?? {};
  return { username: String(a.username), email: a.email, siteAdmin: a['is-site-admin'] === true };
}

export const loginCommands: Command[] = [
  {
    name: 'login',
    summary: 'Obtain and store a token for a Terrace host (shared with Terraform)',
    args: '[host]',
    maxArgs: 1,
    details: `Runs the host's login.v1 OAuth flow when it offers one. Otherwise asks for an API token
(create one with \`terrace tokens create\` or the API), checks it against /api/v2/account/details and
stores it in credentials.tfrc.json, where \`terraform\` finds it too. On a pipe, the token is read
from the first line of stdin:  echo "$TOKEN" | terrace login registry.example.com
The host becomes the default for later commands.`,
    async run(ctx, p) {
      const raw = chooseHost(ctx.env, p.positionals[0] ?? (typeof p.values.host === 'string' ? p.values.host : undefined));
      const config = loadCliConfig(ctx.env);
      for (const w of config.warnings) ctx.err(`warning: ${w}`);
      const target = await discover(ctx.env, config, raw);
      const login = target.services['login.v1'] as LoginV1 | undefined;
      let token: string;
      // A token piped in wins even where the browser flow exists: that is how scripts log in.
      if (ctx.stdin.isTTY && login && typeof login === 'object' && (login.grant_types ?? ['authz_code']).includes('authz_code')) {
        token = await oauthLogin(ctx, target, login);
      } else {
        if (ctx.stdin.isTTY) {
          ctx.err(`${target.host} offers no browser login. Create an API token for your user (for example with`);
          ctx.err('`terrace tokens create` where you are already logged in, or POST /api/v2/users/<you>/authentication-tokens)');
          ctx.err('and paste it here.\n');
        }
        token = await prompt(ctx, ctx.stdin.isTTY ? `Token for ${target.host}: ` : '', true);
        if (!token) throw new CliError('no token given; nothing was stored', EXIT.usage, `pipe the token in: echo "$TOKEN" | terrace login ${raw}`);
      }
      const who = await verify(ctx.env, target, token);
      const file = storeCredentials(ctx.env, config, target.host, token);
      writeDefaultHost(ctx.env, raw);
      ctx.emit({ host: target.host, username: who.username, 'credentials-file': file }, () => {
        ctx.out(`Logged in to ${target.host} as ${who.username}; the token is stored in ${file}.`);
        const override = ctx.env.TF_CLI_CONFIG_FILE || ctx.env.TERRAFORM_CONFIG;
        if (override) {
          ctx.err(`warning: TF_CLI_CONFIG_FILE is set, so Terraform (and terrace) read credentials only from ${override} and TF_TOKEN_ variables,`);
          ctx.err(`not from ${file}: unset it, or add a credentials "${target.host}" block to that file.`);
        }
      });
    },
  },
  {
    name: 'logout',
    summary: 'Remove the stored token for a host from credentials.tfrc.json',
    args: '[host]',
    maxArgs: 1,
    async run(ctx, p) {
      const raw = chooseHost(ctx.env, p.positionals[0] ?? (typeof p.values.host === 'string' ? p.values.host : undefined));
      const config = loadCliConfig(ctx.env);
      const { host } = parseHost(raw);
      const file = storeCredentials(ctx.env, config, host, null);
      ctx.emit({ host, 'credentials-file': file }, () => ctx.out(`Removed the token for ${host} from ${file}.`));
    },
  },
  {
    name: 'whoami',
    summary: 'Show the user the token belongs to, and where the token came from',
    async run(ctx) {
      const api = await ctx.api();
      const res = await api.api('GET', 'account/details', undefined, 'reading your account');
      const a = res.json.data.attributes;
      const v = { host: api.target.host, id: res.json.data.id, username: a.username, email: a.email ?? null, 'is-site-admin': a['is-site-admin'] === true, 'token-source': api.tokenSource ?? null };
      ctx.emit(v, () => {
        ctx.out(`${v.username} (${v.id}) on ${v.host}${v['is-site-admin'] ? ', site admin' : ''}`);
        ctx.out(`token from ${v['token-source']}`);
      });
    },
  },
];
