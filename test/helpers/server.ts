import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ManualClock, type Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { Logger } from '../../src/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { testDatabaseFor } from './store.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestServer {
  url: string;
  running: RunningServer;
  dataDir: string;
  adminToken: string;
  clock: Clock;
  /** Calls Terrace over real HTTP. body objects are sent as JSON:API. */
  api(method: string, pathAndQuery: string, opts?: RequestOptions): Promise<TestResponse>;
  /** Stops the server; removes the data dir unless keepData. */
  close(opts?: { keepData?: boolean }): Promise<void>;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** A response body as JSON, or undefined when it is empty or not JSON. */
export function jsonOrUndefined(text: string): any {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** Every directory tempDir made in this test file's run, removed after its last hook (temp-dirs-setup.ts). */
const madeDirs: string[] = [];

export function tempDir(prefix = 'terrace-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

/** Removes the directories tempDir made (a test file's servers are closed by then). */
export function removeTempDirs(): void {
  for (const dir of madeDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Starts the real server (SQLite file, blob dir, HTTP on an ephemeral port) in a temp data dir.
 * env overrides any setting; token defaults to the site-admin token.
 */
export async function startTestServer(
  env: Record<string, string> = {},
  opts: { dataDir?: string; clock?: Clock; logger?: Logger } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  // Under the postgres project, each data dir gets its own database (kept across restarts on it).
  const database = env.TERRACE_DATABASE_URL === undefined ? await testDatabaseFor(dataDir) : undefined;
  const config = loadConfig({
    PORT: '0',
    TERRACE_DATA_DIR: dataDir,
    TERRACE_ADMIN_TOKEN: ADMIN_TOKEN,
    TERRACE_LOG_LEVEL: 'silent',
    // The test and the server share one busy process: a keep-alive connection the server closes
    // after 5 s idle can be reused by fetch at the same instant and reset (ECONNRESET). Tests of
    // the listener's own timeouts pass their own values.
    TERRACE_KEEP_ALIVE_TIMEOUT_MS: '60000',
    ...(database ? { TERRACE_DATABASE_URL: database.url } : {}),
    ...env,
  });
  const clock = opts.clock ?? new ManualClock(new Date());
  const running = await startServer(config, { clock, logger: opts.logger });
  const url = running.url;
  return {
    url,
    running,
    dataDir,
    adminToken: ADMIN_TOKEN,
    clock,
    api: (method, pathAndQuery, o) => callApi(url, method, pathAndQuery, o),
    async close(o = {}) {
      await running.close();
      if (!o.keepData && !opts.dataDir) {
        await database?.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Calls a Terrace at base over real HTTP, as TestServer.api does: body objects are sent as
 * JSON:API; token defaults to the site-admin token, null sends none.
 */
export async function callApi(base: string, method: string, pathAndQuery: string, o: RequestOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { Accept: 'application/vnd.api+json', ...o.headers };
  const token = o.token === undefined ? ADMIN_TOKEN : o.token;
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  let body: string | Buffer | undefined;
  if (o.rawBody !== undefined) body = o.rawBody;
  else if (o.body !== undefined) body = JSON.stringify(o.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['Content-Type'] = 'application/vnd.api+json';
  }
  const res = await fetch(base + pathAndQuery, { method, headers, body, redirect: 'manual' });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: jsonOrUndefined(text) };
}

/**
 * The same server reached at another address (a proxy in front of it, or another instance on the
 * same store): helpers that take a TestServer then call through there.
 */
export function reachedAt(t: TestServer, base: string): TestServer {
  return { ...t, url: base, api: (method, pathAndQuery, o) => callApi(base, method, pathAndQuery, o) };
}

/** Creates a user through the admin API and a token for it; returns both. */
export async function createUserWithToken(
  t: TestServer,
  username: string,
  opts: { siteAdmin?: boolean } = {},
): Promise<{ id: string; username: string; token: string }> {
  const u = await t.api('POST', '/api/v2/admin/users', {
    body: { data: { type: 'users', attributes: { username, email: `${username}@example.com`, 'is-site-admin': opts.siteAdmin ?? false } } },
  });
  if (u.status !== 201) throw new Error(`create user ${username}: ${u.status} ${u.text}`);
  const tok = await t.api('POST', `/api/v2/users/${u.json.data.id}/authentication-tokens`, {
    body: { data: { type: 'authentication-tokens', attributes: { description: 'test' } } },
  });
  if (tok.status !== 201) throw new Error(`create token for ${username}: ${tok.status} ${tok.text}`);
  return { id: u.json.data.id, username, token: tok.json.data.attributes.token };
}
