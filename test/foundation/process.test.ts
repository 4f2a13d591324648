import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/server.js';

const root = path.resolve(import.meta.dirname, '../..');
const tsx = path.join(root, 'node_modules/.bin/tsx');
const children: ChildProcess[] = [];

interface Proc {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

function start(env: Record<string, string>): Proc {
  const child = spawn(tsx, ['src/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', TERRACE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out: () => out, exited };
}

async function waitFor(p: Proc, re: RegExp): Promise<RegExpMatchArray> {
  for (let i = 0; i < 400; i++) {
    const m = p.out().match(re);
    if (m) return m;
    if (p.child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never saw ${re} in output:\n${p.out()}`);
}

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('the terrace process', () => {
  it('refuses a bad setting, naming the variable', async () => {
    const p = start({ PORT: 'abc', TERRACE_DATA_DIR: tempDir() });
    expect(await p.exited).toBe(2);
    expect(p.out()).toContain('PORT: must be a whole number');
  });

  it('prints a generated admin token once, stores only its hash, and it works', async () => {
    const dataDir = tempDir();
    const first = start({ TERRACE_DATA_DIR: dataDir });
    const [, token] = await waitFor(first, /shown only now; store it safely:\s+(\S+)/);
    const [, url] = await waitFor(first, /"url":"(http:\/\/[^"]+)"/);
    const me = await fetch(`${url}/api/v2/account/details`, { headers: { Authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as any).data.attributes['is-site-admin']).toBe(true);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const db = fs.readFileSync(path.join(dataDir, 'terrace.db'));
    expect(db.includes(Buffer.from(token!))).toBe(false);

    const second = start({ TERRACE_DATA_DIR: dataDir });
    const [, url2] = await waitFor(second, /"url":"(http:\/\/[^"]+)"/);
    expect(second.out()).not.toContain('shown only now');
    const again = await fetch(`${url2}/api/v2/account/details`, { headers: { Authorization: `Bearer ${token}` } });
    expect(again.status).toBe(200);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  });

  it('finishes a request in flight on SIGTERM, then exits cleanly', async () => {
    const p = start({ TERRACE_DATA_DIR: tempDir(), TERRACE_ADMIN_TOKEN: 'process-test-admin-token-0123456789' });
    const [, url] = await waitFor(p, /"url":"(http:\/\/[^"]+)"/);
    // Open a request whose body is still being sent when the signal arrives.
    const u = new URL(`${url}/api/v2/admin/users`);
    const result = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: 'POST',
          headers: { Authorization: 'Bearer process-test-admin-token-0123456789', 'Content-Type': 'application/vnd.api+json' },
        },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.write('{"data":{"type":"users",');
      setTimeout(() => {
        p.child.kill('SIGTERM');
        setTimeout(() => req.end('"attributes":{"username":"late","email":"late@example.com"}}}'), 300);
      }, 200);
    });
    const r = await result;
    expect(r.status).toBe(201);
    expect(await p.exited).toBe(0);
    expect(p.out()).toContain('shutdown complete');
  });
});
