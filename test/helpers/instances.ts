import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ADMIN_TOKEN } from './server.js';
import { storeEnv } from './store.js';

/**
 * Terrace as separate processes, and what puts several of them behind one address: for tests of
 * a crash (SIGKILL) and of several instances on one store.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ServerProcess {
  proc: ChildProcess;
  url: string;
  /** The server's own process (node itself, no wrapper): SIGKILL kills the server, /proc/<pid> is its memory. */
  pid: number;
  /** What it wrote to stdout and stderr so far (its JSON log lines; the last 4 MB). */
  out(): string;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful stop), SIGKILL after 10 s; waits for the exit. */
  stop(): Promise<void>;
}

/**
 * A real server process on dataDir: `node --import tsx src/main.ts` (not the tsx wrapper, whose
 * child would outlive a SIGKILL), or node with nodeArgs instead (say a bundled entry point),
 * configured by env only, the admin token ADMIN_TOKEN, on the store a test server on dataDir used
 * unless env names one. Resolves once it logs its URL (bounded wait).
 */
export async function spawnServer(dataDir: string, env: Record<string, string>, nodeArgs = ['--import', 'tsx', 'src/main.ts']): Promise<ServerProcess> {
  const proc = spawn(process.execPath, nodeArgs, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', TERRACE_DATA_DIR: dataDir, TERRACE_ADMIN_TOKEN: ADMIN_TOKEN, TERRACE_LOG_LEVEL: 'info', ...storeEnv(dataDir), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out = (out + d).slice(-4_000_000)));
  proc.stderr!.on('data', (d) => (out = (out + d).slice(-4_000_000)));
  const gone = () => proc.exitCode !== null || proc.signalCode !== null;
  const exited = new Promise((r) => proc.once('exit', r));
  const kill = async () => {
    if (gone()) return;
    proc.kill('SIGKILL');
    await exited;
  };
  const stop = async () => {
    if (gone()) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  for (let i = 0; i < 1200; i++) {
    const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
    if (m) return { proc, url: m[1]!, pid: proc.pid!, out: () => out, kill, stop };
    if (gone()) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`the server did not start:\n${out}`);
}

/** Passes one request on to target (its origin), bodies streamed both ways; 502 if target fails. */
export function forward(req: http.IncomingMessage, res: http.ServerResponse, target: URL): void {
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
    (ures) => {
      res.writeHead(ures.statusCode ?? 502, ures.headers);
      ures.pipe(res);
    },
  );
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
}

export interface RoundRobin {
  url: string;
  /** The instances behind it (base URLs); change it to take one out. */
  targets: string[];
  /** Requests passed to each target, by origin. */
  served: Map<string, number>;
  close(): Promise<void>;
}

/** One address in front of several instances, as a load balancer: each request to the next in turn, bodies streamed both ways. */
export async function startRoundRobin(targets: string[] = []): Promise<RoundRobin> {
  let next = 0;
  const served = new Map<string, number>();
  const server = http.createServer((req, res) => {
    if (targets.length === 0) {
      res.writeHead(503);
      res.end();
      return;
    }
    const target = new URL(targets[next++ % targets.length]!);
    served.set(target.origin, (served.get(target.origin) ?? 0) + 1);
    forward(req, res, target);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    targets,
    served,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
