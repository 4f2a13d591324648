// One load run against 127.0.0.1: wrk when installed (it drives far more requests/s than a
// Node client on one core), autocannon otherwise. The generator runs in its own process,
// pinned to `cpu` when taskset exists, and GETs a random path of `paths` per request.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_DIR, hasWrk, nodeTs, pinned, runToCompletion } from './common.js';

export type LoadTool = 'wrk' | 'autocannon';

export interface LoadSpec {
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  paths: string[];
  headers?: Record<string, string>;
  connections: number;
  durationSeconds: number;
  tool: LoadTool;
  cpu?: number;
}

export interface LoadResult {
  tool: LoadTool;
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Responses outside 2xx/3xx plus socket errors and timeouts: any of them voids the run. */
  failures: number;
}

export function defaultTool(): LoadTool {
  return hasWrk ? 'wrk' : 'autocannon';
}

let scratch: string | undefined;
function scratchDir(): string {
  scratch ??= fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-load-'));
  return scratch;
}

export function removeScratch(): void {
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
}

let fileCounter = 0;
function writeScratch(name: string, content: string): string {
  const file = path.join(scratchDir(), `${++fileCounter}-${name}`);
  fs.writeFileSync(file, content);
  return file;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(spec.baseUrl)) throw new Error(`refusing to load anything but 127.0.0.1: ${spec.baseUrl}`);
  const pathsFile = writeScratch('paths.txt', `${spec.paths.join('\n')}\n`);
  const timeoutMs = (spec.durationSeconds + 60) * 1000;
  if (spec.tool === 'wrk') {
    const args = ['-t1', `-c${spec.connections}`, `-d${spec.durationSeconds}s`, '--timeout', '30s', '-s', path.join(BENCH_DIR, 'wrk-paths.lua')];
    for (const [k, v] of Object.entries(spec.headers ?? {})) args.push('-H', `${k}: ${v}`);
    args.push(spec.baseUrl, '--', pathsFile);
    const [cmd, full] = pinned(spec.cpu, 'wrk', args);
    const out = await runToCompletion(cmd, full, { timeoutMs });
    const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '));
    if (!line) throw new Error(`wrk printed no summary:\n${out}`);
    const r = JSON.parse(line.slice('WRK_JSON '.length)) as Record<string, number>;
    const seconds = r.duration_us! / 1e6;
    return {
      tool: 'wrk',
      requests: r.requests!,
      seconds,
      rps: r.requests! / seconds,
      p50Ms: r.p50_us! / 1000,
      p90Ms: r.p90_us! / 1000,
      p99Ms: r.p99_us! / 1000,
      maxMs: r.max_us! / 1000,
      failures: r.connect! + r.read! + r.write! + r.status! + r.timeout!,
    };
  }
  const configFile = writeScratch(
    'autocannon.json',
    JSON.stringify({ url: spec.baseUrl, pathsFile, connections: spec.connections, durationSeconds: spec.durationSeconds, headers: spec.headers ?? {} }),
  );
  const [node, nodeArgs] = nodeTs(path.join(BENCH_DIR, 'autocannon-load.ts'));
  const [cmd, full] = pinned(spec.cpu, node, [...nodeArgs, configFile]);
  const out = await runToCompletion(cmd, full, { timeoutMs });
  const line = out.split('\n').find((l) => l.startsWith('AC_JSON '));
  if (!line) throw new Error(`autocannon printed no summary:\n${out}`);
  const r = JSON.parse(line.slice('AC_JSON '.length)) as Record<string, number>;
  return {
    tool: 'autocannon',
    requests: r.requests!,
    seconds: r.seconds!,
    rps: r.requests! / r.seconds!,
    p50Ms: r.p50_ms!,
    p90Ms: r.p90_ms!,
    p99Ms: r.p99_ms!,
    maxMs: r.max_ms!,
    failures: r.errors! + r.timeouts! + r.non2xx!,
  };
}

/**
 * One figure for several generators run at the same time against different instances: requests
 * and failures add up, req/s is the sum of each generator's rate, and each latency percentile is
 * the highest of the generators' (only their percentiles are known, not their samples). That is
 * conservative: at least p% of every generator's requests, so of all of them, took no longer than
 * the highest p-th percentile, so the true merged percentile is at most the figure reported.
 */
export function mergeLoads(parts: LoadResult[]): LoadResult {
  if (parts.length === 0) throw new Error('mergeLoads: nothing to merge');
  const max = (f: (r: LoadResult) => number) => Math.max(...parts.map(f));
  const sum = (f: (r: LoadResult) => number) => parts.reduce((s, r) => s + f(r), 0);
  return {
    tool: parts[0]!.tool,
    requests: sum((r) => r.requests),
    seconds: max((r) => r.seconds),
    rps: sum((r) => r.rps),
    p50Ms: max((r) => r.p50Ms),
    p90Ms: max((r) => r.p90Ms),
    p99Ms: max((r) => r.p99Ms),
    maxMs: max((r) => r.maxMs),
    failures: sum((r) => r.failures),
  };
}
