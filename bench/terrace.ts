// Terrace as a separate process for the benchmarks: `node --import tsx src/main.ts`, pinned to
// one core when taskset exists, configured only through its environment.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ADMIN_TOKEN, HOST, REPO_ROOT, freePort, nodeTs, pinned, spawnTracked, stopChild, waitForHttp } from './common.js';

export interface TerraceProcess {
  url: string;
  /** The node process itself (taskset execs), so /proc/<pid>/status is the server's. */
  pid: number;
  child: ChildProcess;
  /** Milliseconds from spawn until /healthz answered. */
  startupMs: number;
  stop(): Promise<void>;
}

export interface TerraceOptions {
  dataDir: string;
  cpu?: number;
  env?: Record<string, string>;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** The source tree to run (default: this repository), e.g. a patched copy to compare against. */
  root?: string;
}

export async function startTerrace(opts: TerraceOptions): Promise<TerraceProcess> {
  const port = await freePort();
  const url = `http://${HOST}:${port}`;
  const root = opts.root ?? REPO_ROOT;
  const [node, args] = nodeTs(path.join(root, 'src/main.ts'), opts.nodeArgs);
  const [cmd, full] = pinned(opts.cpu, node, args);
  const started = performance.now();
  const child = spawnTracked(cmd, full, {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NODE_ENV: 'production',
      HOST,
      PORT: String(port),
      TERRACE_DATA_DIR: opts.dataDir,
      TERRACE_ADMIN_TOKEN: ADMIN_TOKEN,
      TERRACE_PUBLIC_READ: 'false',
      TERRACE_LOG_LEVEL: 'warn',
      TERRACE_PUBLIC_URL: url,
      ...opts.env,
    },
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    if (stderr.length > 64_000) stderr = stderr.slice(-32_000);
  });
  try {
    await waitForHttp(`${url}/healthz`, child, 120_000);
  } catch (err) {
    await stopChild(child);
    throw new Error(`Terrace did not start: ${(err as Error).message}\n${stderr.trim()}`);
  }
  return {
    url,
    pid: child.pid!,
    child,
    startupMs: performance.now() - started,
    async stop() {
      await stopChild(child, 15_000);
    },
  };
}
