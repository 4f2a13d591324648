// The one way the command talks to Terrace: service discovery, then JSON:API and registry
// protocol calls with the host's token, retried on transient failures.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, EXIT } from './errors.js';
import { comparisonHost, envVarFor, findToken, loadCliConfig, type CliConfig, type Env } from './tfconfig.js';

export interface Target {
  /** The host as credentials are keyed (Terraform's comparison form, with a port if not 443). */
  host: string;
  /** Absolute base URLs of the services the host offers. */
  services: Record<string, unknown>;
  /** Where the services were read from: relative URLs in them resolve against it. */
  base: URL;
  tfe: URL;
  modules: URL;
}

/** Terrace's own settings: only the default host, remembered by `terrace login`. */
function settingsFile(env: Env): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'terrace', 'settings.json');
}

export function readDefaultHost(env: Env): string | undefined {
  try {
    const v = JSON.parse(fs.readFileSync(settingsFile(env), 'utf8')) as { host?: unknown };
    return typeof v.host === 'string' ? v.host : undefined;
  } catch {
    return undefined;
  }
}

export function writeDefaultHost(env: Env, host: string): void {
  const file = settingsFile(env);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify({ host }, null, 2)}\n`);
}

/**
 * Splits what the user typed into the credentials key and where discovery lives. A bare host
 * (optionally with a port) is reached over HTTPS, as Terraform does; a full http(s):// URL is
 * taken as the server's base, for a local server without TLS.
 */
export function parseHost(raw: string): { host: string; discovery: URL } {
  if (/^https?:\/\//i.test(raw)) {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new CliError(`"${raw}" is not a valid URL`, EXIT.usage);
    }
    const host = comparisonHost(u.host);
    if (!host) throw new CliError(`"${raw}" has no valid host name`, EXIT.usage);
    return { host, discovery: new URL('/.well-known/terraform.json', u) };
  }
  const host = comparisonHost(raw);
  if (!host) throw new CliError(`"${raw}" is not a host name (expected for example registry.example.com or registry.example.com:8443)`, EXIT.usage);
  return { host, discovery: new URL(`https://${host}/.well-known/terraform.json`) };
}

const TRANSIENT_STATUS = new Set([429, 502, 503, 504]);

export interface RetryOptions {
  /** Retry after network errors too (safe for GET, PUT and DELETE). */
  idempotent: boolean;
  attempts?: number;
  onRetry?: (why: string, attempt: number) => void;
}

/** Waits for the server's Retry-After (capped) or a doubling back-off. */
async function backoff(attempt: number, res?: Response): Promise<void> {
  const after = Number(res?.headers.get('retry-after'));
  const ms = Number.isFinite(after) && after > 0 ? Math.min(after * 1000, 10_000) : Math.min(250 * 2 ** attempt, 4000);
  await sleep(ms);
}

/** fetch with retries on 429/502/503/504 and, for idempotent requests, on network errors. */
export async function fetchRetrying(url: URL | string, init: RequestInit, opts: RetryOptions): Promise<Response> {
  const attempts = opts.attempts ?? 4;
  for (let attempt = 1; ; attempt++) {
    let res: Response | undefined;
    try {
      res = await fetch(url, init);
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      const refused = cause?.code === 'ECONNREFUSED';
      if (attempt >= attempts || (!opts.idempotent && !refused)) {
        throw new CliError(`cannot reach ${new URL(String(url)).origin}: ${why}`, EXIT.unavailable, 'check the host name and that the server is running');
      }
      opts.onRetry?.(why, attempt);
      await backoff(attempt);
      continue;
    }
    if (!TRANSIENT_STATUS.has(res.status) || attempt >= attempts) return res;
    opts.onRetry?.(`HTTP ${res.status}`, attempt);
    await res.body?.cancel();
    await backoff(attempt, res);
  }
}

/** The messages in a JSON:API (`errors[].detail`) or registry protocol (`errors: [string]`) error body. */
export function errorMessages(body: unknown): string[] {
  const errors = (body as { errors?: unknown } | null)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors.map((e) => (typeof e === 'string' ? e : String((e as { detail?: string; title?: string }).detail || (e as { title?: string }).title || JSON.stringify(e))));
}

export interface ApiResponse { status: number; json: any; headers: Headers }

export class Api {
  constructor(
    readonly env: Env,
    readonly target: Target,
    readonly token: string | undefined,
    readonly tokenSource: string | undefined,
    private readonly onRetry?: (why: string, attempt: number) => void,
  ) {}

  /** Calls the API (`tfe.v2`) at a path relative to it, e.g. `organizations/acme`. */
  api(method: string, rel: string, body?: unknown, what?: string): Promise<ApiResponse> {
    return this.call(method, new URL(rel.replace(/^\//, ''), this.target.tfe), body, what);
  }

  /** Calls the module registry protocol (`modules.v1`) at a path relative to it. */
  registry(rel: string, what?: string, opts: { expect?: number[] } = {}): Promise<ApiResponse> {
    return this.call('GET', new URL(rel.replace(/^\//, ''), this.target.modules), undefined, what, opts.expect);
  }

  async call(method: string, url: URL, body?: unknown, what?: string, expect?: number[]): Promise<ApiResponse> {
    const headers: Record<string, string> = { Accept: 'application/vnd.api+json, application/json' };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/vnd.api+json';
    const res = await fetchRetrying(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' }, {
      idempotent: method !== 'POST',
      onRetry: this.onRetry,
    });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const out = { status: res.status, json, headers: res.headers };
    if (expect ? expect.includes(res.status) : res.status < 300) return out;
    throw this.failure(out, what ?? `${method} ${url.pathname}`);
  }

  /** Turns an unwanted answer into an error that says what failed and what to do. */
  failure(res: ApiResponse, what: string): CliError {
    const detail = errorMessages(res.json).join('; ');
    const host = this.target.host;
    if (res.status === 401) {
      if (!this.token) {
        const v = envVarFor(host);
        return new CliError(`${what}: ${host} needs a token and none is configured`, EXIT.auth, `run \`terrace login ${host}\`${v ? ` or set ${v}` : ''}`);
      }
      return new CliError(`${what}: ${host} rejected the token from ${this.tokenSource} (401)`, EXIT.auth, `the token is invalid or expired: run \`terrace login ${host}\` again`);
    }
    if (res.status === 404) {
      return new CliError(`${what}: not found${detail && detail !== 'not found' ? ` (${detail})` : ''}`, EXIT.notFound, 'check the names, and that your token may see them');
    }
    if (res.status >= 500) return new CliError(`${what}: the server failed (${res.status})${detail ? `: ${detail}` : ''}`, EXIT.unavailable, 'try again later; if it persists, check the server log');
    return new CliError(`${what}: ${detail || `HTTP ${res.status}`}`, EXIT.failed);
  }
}

/** Reads the host's services: from a `host` block in the CLI configuration, else its discovery document. */
export async function discover(env: Env, config: CliConfig, raw: string): Promise<Target> {
  const { host, discovery } = parseHost(raw);
  let services: Record<string, unknown>;
  let base = discovery;
  const configured = config.hosts.get(host);
  if (configured) {
    services = configured;
  } else {
    const res = await fetchRetrying(discovery, { headers: { Accept: 'application/json' } }, { idempotent: true });
    if (res.status !== 200) {
      throw new CliError(`${host} does not offer Terraform services: ${discovery} answered ${res.status}`, EXIT.unavailable, 'check the host name (and its port)');
    }
    try {
      services = (await res.json()) as Record<string, unknown>;
    } catch {
      throw new CliError(`${host} answered ${discovery} with something that is not JSON`, EXIT.unavailable);
    }
    base = new URL(res.url || discovery);
  }
  const resolve = (id: string): URL | undefined => {
    const v = services[id];
    return typeof v === 'string' ? new URL(v, base) : undefined;
  };
  const tfe = resolve('tfe.v2');
  const modules = resolve('modules.v1');
  if (!tfe || !modules) {
    throw new CliError(`${host} does not look like Terrace: its discovery document offers no ${tfe ? 'modules.v1' : 'tfe.v2'} service`, EXIT.failed);
  }
  const abs: Record<string, unknown> = {};
  for (const k of Object.keys(services)) abs[k] = typeof services[k] === 'string' ? resolve(k)!.href : services[k];
  return { host, services: abs, base, tfe, modules };
}

/** The host to talk to: --host, else TERRACE_HOST, else the one `terrace login` last stored. */
export function chooseHost(env: Env, flag: string | undefined): string {
  const host = flag || env.TERRACE_HOST || readDefaultHost(env);
  if (!host) throw new CliError('no Terrace host given', EXIT.usage, 'pass --host <host>, set TERRACE_HOST, or run `terrace login <host>` once');
  return host;
}

export async function connect(env: Env, hostFlag: string | undefined, log: (line: string) => void): Promise<Api> {
  const config = loadCliConfig(env);
  for (const w of config.warnings) log(`warning: ${w}`);
  const onRetry = (why: string, attempt: number) => log(`retrying after ${why} (attempt ${attempt})`);
  const target = await discover(env, config, chooseHost(env, hostFlag));
  const found = findToken(env, config, target.host);
  return new Api(env, target, found?.token, found?.source, onRetry);
}
