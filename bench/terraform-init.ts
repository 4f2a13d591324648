// `terraform get` of a configuration with 50 registry modules from the seeded registry: what a
// `terraform init` costs in module installation, and how much of it is Terrace's.
//
//   npm run bench -- --only tf-init            # on every store the benchmark runs
//   npx tsx bench/terraform-init.ts [--runs 3] # on its own, against the cached SQLite seed
//
// Terraform talks only HTTPS to registry hosts, so Terrace serves TLS with a throwaway certificate
// for a dotted host name, and a CLI config (TF_CLI_CONFIG_FILE) points the name's services at it
// and gives the ordinary member's token (the same setup as the tests' terraform helper). `terraform
// get` installs modules and nothing else (no providers, no backend), from a fresh .terraform each
// run. Terrace runs with its access log on (info level); its share of the wall time is the sum of
// the access log's `ms` over the run's requests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { selfSignedCertificate, terraformCliEnv } from '../test/helpers/terraform-cli.js';
import { READER_TOKEN, commandExists, fmtMs, log, markdownTable, median, parseFlags, runToCompletion, sleep, stopAll } from './common.js';
import { copySeed, DEFAULT_SEED, ensureSeed, type SeedManifest } from './seed.js';
import { startTerrace } from './terrace.js';

const HOST = 'registry.bench.test';
const MODULES = 50;
/** Constraints the default seed (0.1.0 … 2.0.0, one pre-release) satisfies in different ways. */
const CONSTRAINTS = ['~> 1.0', '>= 0.2.0, < 2.0.0', '1.0.1', '~> 0.2', '>= 1.1.0'];

export interface TerraformInitRun {
  wallMs: number;
  requests: number;
  /** Sum of the access log's per-request milliseconds. */
  serverMs: number;
  /** Requests and server milliseconds by kind: versions, download, archive <method>, other <method>. */
  byKind: Record<string, { requests: number; ms: number }>;
}

export interface TerraformInitResult {
  label: string;
  modules: number;
  runs: TerraformInitRun[];
  ok: boolean;
  error?: string;
}

/** null when terraform get can run here, else why not. */
export function terraformInitAvailable(): string | null {
  if (!commandExists('terraform')) return 'no terraform CLI on PATH';
  if (!commandExists('openssl')) return 'no openssl to make the certificate Terraform needs';
  return null;
}

/** 50 distinct modules of the member's organizations, spread over them, each with a version constraint. */
function configuration(manifest: SeedManifest): string {
  const mine = manifest.modules.filter((m) => manifest.readerNamespaces.includes(m.namespace));
  if (mine.length < MODULES) throw new Error(`the seed gives the member only ${mine.length} modules; terraform get needs ${MODULES}`);
  const step = Math.floor(mine.length / MODULES);
  return Array.from({ length: MODULES }, (_, i) => {
    const m = mine[i * step]!;
    return `module "m${String(i + 1).padStart(2, '0')}" {\n  source  = "${HOST}/${m.namespace}/${m.name}/${m.provider}"\n  version = "${CONSTRAINTS[i % CONSTRAINTS.length]}"\n}\n`;
  }).join('\n');
}

function kindOf(method: string, p: string): string {
  if (p.endsWith('/versions')) return 'versions';
  if (p.endsWith('/download')) return 'download';
  if (p.startsWith('/archives/')) return `archive ${method}`;
  return `other ${method}`;
}

/** The access log's request lines among pino JSON lines. */
function requestLines(text: string): { method: string; path: string; ms: number; status: number }[] {
  const out: { method: string; path: string; ms: number; status: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const j = JSON.parse(line) as { msg?: string; method?: string; path?: string; ms?: number; status?: number };
      if (j.msg === 'request' && typeof j.ms === 'number') out.push({ method: j.method ?? '', path: j.path ?? '', ms: j.ms, status: j.status ?? 0 });
    } catch {
      // not a log line
    }
  }
  return out;
}

export interface TerraformInitOptions {
  label: string;
  manifest: SeedManifest;
  /** A data dir holding the seed (SQLite), or the shared blob dir with databaseUrl. No other process may use a SQLite one meanwhile. */
  dataDir: string;
  databaseUrl?: string;
  secretKey?: string;
  cpu?: number;
  /** Scratch directory (created; the caller removes it). */
  workDir: string;
  runs?: number;
}

export async function runTerraformInit(opts: TerraformInitOptions): Promise<TerraformInitResult> {
  const runsWanted = opts.runs ?? 3;
  fs.mkdirSync(opts.workDir, { recursive: true });
  const { cert, key } = selfSignedCertificate(opts.workDir, [HOST]);
  const terrace = await startTerrace({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    secretKey: opts.secretKey,
    cpu: opts.cpu,
    tls: { cert, key },
    captureStdout: true,
    env: { TERRACE_LOG_LEVEL: 'info' },
  });
  const result: TerraformInitResult = { label: opts.label, modules: MODULES, runs: [], ok: true };
  try {
    const config = path.join(opts.workDir, 'config');
    fs.mkdirSync(config, { recursive: true });
    fs.writeFileSync(path.join(config, 'main.tf'), configuration(opts.manifest));
    const env = terraformCliEnv(opts.workDir, HOST, terrace.url, READER_TOKEN, cert);
    for (let i = 1; i <= runsWanted; i++) {
      fs.rmSync(path.join(config, '.terraform'), { recursive: true, force: true });
      const before = terrace.stdout().length;
      const started = performance.now();
      await runToCompletion('terraform', ['get', '-no-color'], { cwd: config, env, timeoutMs: 300_000 });
      const wallMs = performance.now() - started;
      const installed = JSON.parse(fs.readFileSync(path.join(config, '.terraform/modules/modules.json'), 'utf8')) as { Modules: { Key: string }[] };
      if (installed.Modules.filter((m) => m.Key !== '').length !== MODULES) throw new Error(`terraform get installed ${installed.Modules.length - 1} modules, not ${MODULES}`);
      // The last access-log lines may still be in the pipe: read until nothing new arrives (bounded).
      let seen = -1;
      for (let k = 0; k < 50 && terrace.stdout().length !== seen; k++) {
        seen = terrace.stdout().length;
        await sleep(50);
      }
      const lines = requestLines(terrace.stdout().slice(before));
      const failed = lines.filter((l) => l.status >= 400);
      if (failed.length) throw new Error(`${failed.length} requests failed during terraform get, e.g. ${failed[0]!.status} ${failed[0]!.path}`);
      const byKind: TerraformInitRun['byKind'] = {};
      for (const l of lines) {
        const k = (byKind[kindOf(l.method, l.path)] ??= { requests: 0, ms: 0 });
        k.requests++;
        k.ms += l.ms;
      }
      result.runs.push({ wallMs, requests: lines.length, serverMs: lines.reduce((s, l) => s + l.ms, 0), byKind });
      log(`terraform get (${opts.label}) run ${i}/${runsWanted}: ${(wallMs / 1000).toFixed(2)} s, ${lines.length} requests, ${fmtMs(result.runs.at(-1)!.serverMs)} ms in Terrace`);
    }
  } catch (err) {
    result.ok = false;
    result.error = (err as Error).message;
    log(`terraform get (${opts.label}) failed: ${result.error}`);
  } finally {
    await terrace.stop();
  }
  return result;
}

export function formatTerraformInit(results: TerraformInitResult[]): string {
  const rows = results.map((r) => {
    if (!r.ok || r.runs.length === 0) return [r.label, '–', '–', '–', '–', '–', `**failed**: ${r.error ?? 'no runs'}`];
    const wall = median(r.runs.map((x) => x.wallMs));
    const server = median(r.runs.map((x) => x.serverMs));
    const kinds = Object.keys(r.runs[0]!.byKind).sort();
    return [
      r.label,
      `${(wall / 1000).toFixed(2)} s`,
      r.runs.map((x) => (x.wallMs / 1000).toFixed(2)).join(' / '),
      String(median(r.runs.map((x) => x.requests))),
      `${fmtMs(server)} ms`,
      `${((server / wall) * 100).toFixed(1)}%`,
      kinds.map((k) => `${k} ${r.runs[0]!.byKind[k]!.requests} × ${fmtMs(r.runs[0]!.byKind[k]!.ms / r.runs[0]!.byKind[k]!.requests)} ms`).join(', '),
    ];
  });
  return [
    `terraform get of a configuration with ${results[0]?.modules ?? MODULES} registry modules (member's token, fresh .terraform each run; medians):`,
    '',
    markdownTable(['store', 'wall (median)', 'wall per run, s', 'requests', 'Terrace time', 'share of wall', 'per request (first run)'], rows, ['l', 'r', 'r', 'r', 'r', 'r', 'l']),
    '',
    "Terrace time is the sum of the access log's `ms` (the request's arrival at the middleware until its handler returned; an archive's bytes stream after that).",
  ].join('\n');
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), { runs: 'string' });
  const why = terraformInitAvailable();
  if (why) throw new Error(why);
  const { dir: seedDir, manifest } = await ensureSeed(DEFAULT_SEED);
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-tf-'));
  try {
    const dataDir = path.join(runDir, 'data');
    copySeed(seedDir, dataDir);
    const r = await runTerraformInit({ label: 'SQLite', manifest, dataDir, workDir: path.join(runDir, 'tf'), runs: Number(flags.runs ?? 3) });
    process.stdout.write(`\n${formatTerraformInit([r])}\n`);
    if (!r.ok) process.exitCode = 1;
  } finally {
    await stopAll();
    fs.rmSync(runDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  main().catch(async (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    await stopAll();
    process.exit(1);
  });
}
