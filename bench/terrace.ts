// Terrace as a separate process for the benchmarks: this tree built and bundled (`node dist/server/main.mjs`, as `npm start` runs it), pinned to
// one core when taskset exists, configured only through its environment.
import { execFileSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ADMIN_TOKEN, HOST, REPO_ROOT, freePort, nodeTs, pinned, spawnTracked, stopChild, waitForHttp } from './common.js';

export interface TerraceProcess {
  url: string;
  /** The node process itself (taskset execs), so /proc/<pid>/status is the server's. */
  pid: number;
  child: ChildProcess;
  /** Milliseconds from spawn until the first successful /readyz (store and blob store checked). */
  startupMs: number;
  /** Everything the process wrote to stdout (its logs), when TerraceOptions.captureStdout. */
  stdout(): string;
  /** RSS after the load runs, filled in by the benchmark. */
  rssAfter?: number | null;
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
  /** PostgreSQL instead of the data dir's SQLite file (TERRACE_DATABASE_URL); instances sharing it need one secretKey. */
  databaseUrl?: string;
  secretKey?: string;
  /** Serve HTTPS with this certificate (Terraform talks only HTTPS to registry hosts). */
  tls?: { cert: string; key: string };
  /** Keep the process's stdout (its JSON logs), e.g. to read an info-level access log. */
  captureStdout?: boolean;
}

let built = false;

/** Builds this tree once per benchmark run (`npm run build`, as `npm start` does) and returns the entry point `npm start` runs. */
function compiledMain(): string {
  if (!built) {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, stdio: 'inherit', timeout: 300_000 });
    built = true;
  }
  return path.join(REPO_ROOT, 'dist/server/main.mjs');
}

export async function startTerrace(opts: TerraceOptions): Promise<TerraceProcess> {
  const port = await freePort();
  const url = `${opts.tls ? 'https' : 'http'}://${HOST}:${port}`;
  const root = opts.root ?? REPO_ROOT;
  // This tree runs built and bundled, as `npm start` does (tsx would add seconds to every
  // start-up figure); a --compare tree runs from its sources.
  const [node, args] = root === REPO_ROOT ? [process.execPath, [...(opts.nodeArgs ?? []), '--enable-source-maps', compiledMain()]] : nodeTs(path.join(root, 'src/main.ts'), opts.nodeArgs);
  const [cmd, full] = pinned(opts.cpu, node, args);
  const started = performance.now();
  const child = spawnTracked(cmd, full, {
    cwd: root,
    stdio: ['ignore', opts.captureStdout ? 'pipe' : 'ignore', 'pipe'],
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
      ...(opts.databaseUrl ? { TERRACE_DATABASE_URL: opts.databaseUrl } : {}),
      ...(opts.secretKey ? { TERRACE_SECRET_KEY: opts.secretKey } : {}),
      ...(opts.tls ? { TERRACE_TLS_CERT: opts.tls.cert, TERRACE_TLS_KEY: opts.tls.key } : {}),
      ...opts.env,
    },
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    if (stderr.length > 64_000) stderr = stderr.slice(-32_000);
  });
  const stdout: string[] = [];
  child.stdout?.setEncoding('utf8').on('data', (d: string) => stdout.push(d));
  try {
    // The throwaway certificate of a TLS instance is not in Node's trust store: readiness is
    // polled without verification (only ever on 127.0.0.1).
    if (opts.tls) process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    await waitForHttp(`${url}/readyz`, child, 120_000);
  } catch (err) {
    await stopChild(child);
    throw new Error(`Terrace did not start: ${(err as Error).message}\n${stderr.trim()}`);
  } finally {
    if (opts.tls) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  }
  const startupMs = performance.now() - started;
  return {
    url,
    pid: child.pid!,
    child,
    startupMs,
    stdout: () => stdout.join(''),
    async stop() {
      await stopChild(child, 15_000);
    },
  };
}
