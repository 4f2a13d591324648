// Shared plumbing for the benchmarks: child processes that are always cleaned up, CPU pinning,
// ports, readiness polling, RSS sampling and small statistics helpers. Traffic only ever goes
// to 127.0.0.1.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BENCH_DIR = path.join(REPO_ROOT, 'bench');
export const HOST = '127.0.0.1';

/** Site-admin token the benchmark configures (TERRACE_ADMIN_TOKEN); only ever used locally. */
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdefghij';
/** Token of an ordinary user the seeder makes a member of a few organizations. */
export const READER_TOKEN = 'bench-reader-token-0123456789abcdefghij';

// ---------------------------------------------------------------------------------------------
// Command line

/** `--name value`, `--name=value` and bare `--flag` (true). Unknown flags are an error. */
export function parseFlags(argv: string[], known: Record<string, 'bool' | 'string'>): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') continue;
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    if (!m || !(m[1]! in known)) throw new Error(`unknown argument ${arg}; known: ${Object.keys(known).map((k) => `--${k}`).join(' ')}`);
    const name = m[1]!;
    if (known[name] === 'bool') {
      out[name] = m[2] === undefined ? true : !['0', 'false', 'no'].includes(m[2]);
    } else {
      const value = m[2] ?? argv[++i];
      if (value === undefined) throw new Error(`--${name} needs a value`);
      out[name] = value;
    }
  }
  return out;
}

/** A positive numeric option. */
export function numberOption(flags: Record<string, string | boolean>, flag: string, envName: string, def: number): number {
  const raw = flags[flag] ?? process.env[envName];
  if (raw === undefined || raw === '' || typeof raw === 'boolean') return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${flag} / ${envName} must be a positive number, got "${raw}"`);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Child processes

const children = new Set<ChildProcess>();
let exitHooksInstalled = false;

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  // 'exit' handlers must be synchronous: a last SIGKILL for anything still running.
  process.on('exit', () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const r of resources) r.kill();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal} received, stopping child processes\n`);
      void stopAll().finally(() => process.exit(130));
    });
  }
}

/** Whether `taskset` exists (Linux util-linux); pinning is skipped without it. */
export const hasTaskset: boolean = commandExists('taskset');
export const hasWrk: boolean = commandExists('wrk');

export function commandExists(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

export function cpuCount(): number {
  const r = spawnSync('nproc', [], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 1;
}

/** Prefixes `taskset -c <cpu>` when pinning is possible (taskset execs, so the pid is the program's). */
export function pinned(cpu: number | undefined, cmd: string, args: string[]): [string, string[]] {
  if (cpu === undefined || !hasTaskset) return [cmd, args];
  return ['taskset', ['-c', String(cpu), cmd, ...args]];
}

/** Pins a running process and all its threads to cpu (children it forks later inherit it); false if it could not. */
export function pinProcess(pid: number, cpu: number | undefined): boolean {
  if (cpu === undefined || !hasTaskset) return false;
  return spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' }).status === 0;
}

/** Spawns a tracked child: killed when the benchmark exits, however it exits. */
export function spawnTracked(cmd: string, args: string[], opts: SpawnOptions = {}): ChildProcess {
  installExitHooks();
  const child = spawn(cmd, args, { cwd: REPO_ROOT, ...opts });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** SIGTERM, then SIGKILL after graceMs; resolves when the child has exited. */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Something besides a child process the benchmark must stop on exit (e.g. a PostgreSQL cluster). */
export interface Resource {
  stop(): Promise<void>;
  /** Synchronous last resort, for the 'exit' handler. */
  kill(): void;
}
const resources = new Set<Resource>();

/** Stopped by stopAll() and killed on exit, however the benchmark exits; the returned function stops it early. */
export function trackResource(r: Resource): () => Promise<void> {
  installExitHooks();
  resources.add(r);
  return async () => {
    if (!resources.delete(r)) return;
    await r.stop();
  };
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c)));
  const rs = [...resources];
  resources.clear();
  await Promise.all(rs.map((r) => r.stop().catch(() => r.kill())));
}

/** Runs a command to completion, collecting stdout; rejects on a non-zero exit. */
export async function runToCompletion(cmd: string, args: string[], opts: SpawnOptions & { timeoutMs?: number } = {}): Promise<string> {
  const child = spawnTracked(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : undefined;
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    // 'close', not 'exit': a process can exit before its output has been read from the pipe (a
    // full run once lost wrk's summary that way).
    child.once('close', (c) => resolve(c));
  });
  if (timer) clearTimeout(timer);
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${code}\n${stderr.trim()}`);
  return stdout;
}

/** `node --import tsx <script>`: the pid is node's own, so /proc/<pid> is the server. */
export function nodeTs(script: string, nodeArgs: string[] = []): [string, string[]] {
  return [process.execPath, [...nodeArgs, '--import', 'tsx', script]];
}

// ---------------------------------------------------------------------------------------------
// Network

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Polls url until it answers with `status` (default 200) or the child dies or time runs out. */
export async function waitForHttp(url: string, child: ChildProcess, timeoutMs = 60_000, status = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`process for ${url} exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === status) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready after ${timeoutMs} ms`);
    // Short: start-up times are measured with this poll.
    await sleep(20);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Memory

/** Resident set size of a process in bytes, from /proc/<pid>/status (Linux); null elsewhere. */
export function readRss(pid: number): number | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Median RSS over a second of idling. */
export async function idleRss(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 10; i++) {
    samples.push(readRss(pid) ?? 0);
    await sleep(100);
  }
  return median(samples);
}

/** CPU time (user + system) a process has used, in clock ticks (usually 1/100 s); null elsewhere. */
export function readCpuTicks(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesized command name, which may itself contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/** A process's children (from /proc on Linux), e.g. the backends and workers a PostgreSQL postmaster forked; none elsewhere. */
export function childPids(pid: number): number[] {
  try {
    return fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((tid) => fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/))
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * Waits until a process is idle (under 10% of a core over 300 ms), e.g. until a server has
 * drained requests a load generator left queued, so it does not steal the next scenario's
 * core. Returns the milliseconds waited; gives up after timeoutMs.
 */
export async function waitIdle(pid: number, timeoutMs = 120_000): Promise<number> {
  const started = Date.now();
  let last = readCpuTicks(pid);
  if (last === null) return 0;
  for (;;) {
    await sleep(300);
    const now = readCpuTicks(pid);
    if (now === null || now - last <= 3) return Date.now() - started;
    if (Date.now() - started > timeoutMs) return Date.now() - started;
    last = now;
  }
}

/** Samples a process's RSS every intervalMs until stopped; reports the peak and the samples. */
export class RssSampler {
  private timer: NodeJS.Timeout | undefined;
  readonly samples: number[] = [];
  constructor(
    private readonly pid: number,
    private readonly intervalMs = 100,
  ) {}

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    return this;
  }

  private sample(): void {
    const rss = readRss(this.pid);
    if (rss !== null) this.samples.push(rss);
  }

  stop(): { peak: number; last: number; count: number } {
    if (this.timer) clearInterval(this.timer);
    this.sample();
    return { peak: Math.max(0, ...this.samples), last: this.samples.at(-1) ?? 0, count: this.samples.length };
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics and formatting

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export const MiB = 1024 * 1024;
export const fmtMiB = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
export const fmtMs = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));
export const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');

/** A GitHub-flavoured markdown table. */
export function markdownTable(header: string[], rows: string[][], align: ('l' | 'r')[] = []): string {
  const sep = header.map((_, i) => (align[i] === 'r' ? '---:' : '---'));
  return [header, sep, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}
