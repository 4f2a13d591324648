// The Terrace benchmark (run on demand, not a test):
//
//   npm run bench                 # full: 3 rounds × 10 s per scenario, 50 connections, both stores,
//                                 # one and two instances on PostgreSQL, terraform get, 500 MiB upload
//   npm run bench -- --quick      # 1 round × 2 s, both stores, one instance, no large upload
//
// Seeds (or reuses) a registry of 10,000 modules × 10 versions in SQLite and, when PostgreSQL is
// installed, the same registry in a PostgreSQL database; starts Terrace as separate processes on
// each store, pinned to core 0 with PostgreSQL and a bare node:http server answering a same-size
// fixed JSON body (all idle while another is measured), and drives them from core 1 with wrk (or
// autocannon when wrk is missing). Rounds interleave the scenarios; each number reported is the
// median of the rounds, and throughput is also given as a ratio to the bare server measured in
// the same run. See docs/performance.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ADMIN_TOKEN,
  BENCH_DIR,
  READER_TOKEN,
  childPids,
  cpuCount,
  fmtInt,
  fmtMiB,
  fmtMs,
  freePort,
  hasTaskset,
  hasWrk,
  log,
  markdownTable,
  median,
  nodeTs,
  numberOption,
  parseFlags,
  pinned,
  readRss,
  spawnTracked,
  stopAll,
  stopChild,
  waitForHttp,
  waitIdle,
} from './common.js';
import { summarize } from './cpuprofile-top.js';
import { formatLargeUpload, largeUploadOk, runLargeUpload, type LargeUploadResult } from './large-upload.js';
import { defaultTool, mergeLoads, removeScratch, runLoad, type LoadResult, type LoadTool } from './load.js';
import { postgresAvailable, startSeededPostgres, type BenchPostgres } from './postgres.js';
import { DEFAULT_SEED, copySeed, ensureSeed, shareSeedBlobs, type SeedManifest, type SeedOptions } from './seed.js';
import { startTerrace, type TerraceProcess } from './terrace.js';
import { formatTerraformInit, runTerraformInit, terraformInitAvailable, type TerraformInitResult } from './terraform-init.js';

const FLAGS = {
  quick: 'bool',
  duration: 'string',
  pair: 'string',
  warmup: 'string',
  connections: 'string',
  runs: 'string',
  tool: 'string',
  only: 'string',
  store: 'string',
  instances: 'string',
  reseed: 'bool',
  orgs: 'string',
  'modules-per-org': 'string',
  versions: 'string',
  'no-large': 'bool',
  'no-prime': 'bool',
  'large-mib': 'string',
  'slow-client-mibps': 'string',
  'no-pin': 'bool',
  profile: 'bool',
  out: 'string',
  compare: 'string',
  help: 'bool',
} as const;

const SCENARIO_IDS = ['versions', 'download', 'search', 'search-1c', 'detail', 'reader', 'download-member'];

const HELP = `usage: npm run bench -- [options]        (every option also reads BENCH_<NAME> from the environment)
  --quick                 1 round × 2 s, 1 s warm-up, one instance, no large upload, no terraform get
  --duration <s>          seconds measured per scenario and round (default 10; quick 2)
  --warmup <s>            warm-up seconds per scenario, first round only (default 3; quick 1)
  --pair <s>              seconds of bare server measured around each Terrace measurement (half right
                          before it, half right after), for
                          its "vs bare" ratio (default half of --duration)
  --connections <n>       concurrent connections (default 50)
  --runs <n>              rounds; each figure is the median over rounds (default 3; quick 1)
  --tool wrk|autocannon   load generator (default: wrk when installed)
  --only <a,b>            what to run besides bare: ${SCENARIO_IDS.join(',')},tf-init
                          (default: all scenarios, and tf-init unless --quick; --only skips the large upload)
  --store sqlite|postgres|both   stores to measure (default both when PostgreSQL is installed)
  --instances 1|2|both    Terrace processes on PostgreSQL driven at once (default both; quick 1)
  --reseed                rebuild the cached seed
  --orgs <n> --modules-per-org <n> --versions <n>   seed size (default 100 × 100 × 10)
  --no-large              skip the large upload/download memory check
  --no-prime              do not request every path once before round 1 (measure from a cold cache)
  --large-mib <n>         size of the large tarball (default 500; a fifth-size reference goes first)
  --slow-client-mibps <n> also download the large tarball at this rate (default 50; 0 = skip)
  --no-pin                do not pin processes to cores
  --profile               run the first Terrace under --cpu-prof and summarize where its time went
  --compare <dir>         also run the Terrace scenarios against the tree in <dir> (e.g. a patched
                          copy with node_modules linked) on SQLite, interleaved with this one: rows marked [B]
  --out <file>            also write the results (markdown) to this file`;

/** One set of Terrace processes the scenarios run against: one process, or several driven at once. */
interface Target {
  id: string;
  label: string;
  instances: TerraceProcess[];
}

interface Scenario {
  id: string;
  title: string;
  paths: string[];
  headers?: Record<string, string>;
  connections: number;
  /** 204 for downloads, else 200. */
  status: number;
}

/** A scenario against a target (or the bare server: target null), with its rounds. */
interface Measure {
  scenario: Scenario;
  target: Target | null;
  runs: LoadResult[];
  /**
   * The bare server measured around each of runs (same index): half the pair time right before
   * it and half right after, their mean req/s as rps.
   */
  baselines: LoadResult[];
}

function shuffle<T>(items: T[], seed = 42): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const enc = encodeURIComponent;

function buildScenarios(m: SeedManifest, connections: number): { bare: Scenario; bareDirect: Scenario; terrace: Scenario[] } {
  const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  const member = { Authorization: `Bearer ${READER_TOKEN}` };
  const modulePath = (x: { namespace: string; name: string; provider: string }) => `/v1/modules/${enc(x.namespace)}/${enc(x.name)}/${enc(x.provider)}`;
  const downloadsOf = (mods: SeedManifest['modules']) => {
    const out: string[] = [];
    mods.forEach((x, i) => {
      for (let k = 0; k < 2; k++) out.push(`${modulePath(x)}/${m.versions[(i * 7 + k * 3) % m.versions.length]}/download`);
    });
    return out;
  };
  const modules = shuffle(m.modules);
  // Popular terms are searched more often than rare ones; one matches nothing.
  const searches: string[] = [];
  m.searchTerms.forEach((term, i) => {
    const weight = i < 6 ? 4 : i < 10 ? 2 : 1;
    for (let k = 0; k < weight; k++) searches.push(`/v1/modules/search?q=${enc(term)}`);
  });
  const readerModules = modules.filter((x) => m.readerNamespaces.includes(x.namespace));
  return {
    bare: { id: 'bare', title: 'bare node:http, fixed JSON body', paths: ['/'], connections, status: 200 },
    // The same server ending each answer at once: the baseline of the runs before 2026-11-26 (bench/bare-server.ts).
    bareDirect: { id: 'bare-direct', title: 'bare node:http, each answer ended at once (the baseline before 2026-11-26)', paths: ['/direct'], connections, status: 200 },
    terrace: [
      { id: 'versions', title: 'GET …/versions (site admin)', paths: modules.map((x) => `${modulePath(x)}/versions`), headers: auth, connections, status: 200 },
      { id: 'download', title: 'GET …/<version>/download → 204 (site admin)', paths: shuffle(downloadsOf(modules), 7), headers: auth, connections, status: 204 },
      { id: 'search', title: 'GET /v1/modules/search?q=…', paths: shuffle(searches, 9), headers: auth, connections, status: 200 },
      { id: 'search-1c', title: 'search, 1 connection', paths: shuffle(searches, 11), headers: auth, connections: 1, status: 200 },
      { id: 'detail', title: 'GET …/<provider> (module detail)', paths: modules.map(modulePath), headers: auth, connections, status: 200 },
      { id: 'reader', title: 'GET …/versions (member, not admin)', paths: readerModules.map((x) => `${modulePath(x)}/versions`), headers: member, connections, status: 200 },
      { id: 'download-member', title: 'GET …/<version>/download → 204 (member)', paths: shuffle(downloadsOf(readerModules), 13), headers: member, connections, status: 204 },
    ],
  };
}

/** One request before any load: the right status, or the scenario is left out (member ones) or the run fails. */
async function probe(base: string, s: Scenario): Promise<string | null> {
  const res = await fetch(base + s.paths[0], { headers: s.headers, redirect: 'manual' });
  await res.arrayBuffer();
  return res.status === s.status ? null : `${s.paths[0]} answered ${res.status}, expected ${s.status}`;
}

async function startBare(bodyFile: string, cpu: number | undefined): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const [node, args] = nodeTs(path.join(BENCH_DIR, 'bare-server.ts'));
  const [cmd, full] = pinned(cpu, node, args);
  const child = spawnTracked(cmd, full, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, PORT: String(port), BARE_BODY_FILE: bodyFile } });
  await waitForHttp(`${url}/`, child, 30_000);
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}

/**
 * A load run against a target: against several instances at once, one generator per instance,
 * each with its share of the connections, started together; see mergeLoads for the figures.
 */
async function loadTarget(target: Target, spec: Omit<Parameters<typeof runLoad>[0], 'baseUrl'>): Promise<LoadResult> {
  if (target.instances.length === 1) return runLoad({ ...spec, baseUrl: target.instances[0]!.url });
  const n = target.instances.length;
  const shares = target.instances.map((_, i) => Math.floor(spec.connections / n) + (i < spec.connections % n ? 1 : 0));
  return mergeLoads(await Promise.all(target.instances.map((t, i) => runLoad({ ...spec, baseUrl: t.url, connections: shares[i]! }))));
}

/** Two significant digits, so small ratios do not all read 0.00. */
/** The bare server's seconds on each side of a Terrace measurement (wrk takes whole seconds). */
const halfPair = (pairSeconds: number) => Math.max(1, Math.round(pairSeconds / 2));
const ratio = (x: number) => (x >= 0.1 ? x.toFixed(2) : x.toPrecision(2));
const medianOf = (m: Measure | undefined, f: (r: LoadResult) => number) => (m ? median(m.runs.map(f)) : NaN);
/**
 * A Terrace measurement's throughput as a share of the bare server's: the median over rounds of
 * each round's req/s over the bare server's measured around it, half right before and half right
 * after (the machine's speed drifts by a third within a run, sometimes within a measurement: a
 * baseline on both sides of it shares its state best).
 */
function bareRatio(m: Measure): number {
  if (m.baselines.length === 0) return 1;
  return median(m.runs.map((r, i) => r.rps / m.baselines[i]!.rps));
}
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
/** Every instance on PostgreSQL uses this key (a shared database needs one TERRACE_SECRET_KEY); local only. */
const SHARED_SECRET_KEY = `bench-shared-secret-key-${'0123456789'.repeat(3)}`;

/** The issue's four aims, per target, from this run's medians. */
const AIMS = [
  { aim: 'versions ≥ 0.5 × bare, site admin', scenario: 'versions', kind: 'ratio', limit: 0.5 },
  { aim: 'versions ≥ 0.5 × bare, member', scenario: 'reader', kind: 'ratio', limit: 0.5 },
  { aim: 'download ≥ 0.35 × bare, site admin', scenario: 'download', kind: 'ratio', limit: 0.35 },
  { aim: 'download ≥ 0.35 × bare, member', scenario: 'download-member', kind: 'ratio', limit: 0.35 },
  { aim: 'search p99 < 20 ms at 50 connections', scenario: 'search', kind: 'p99', limit: 20 },
  { aim: 'start-up < 1 s with 100,000 blobs', scenario: null, kind: 'startup', limit: 1000 },
] as const;

function aimsTable(measures: Measure[], targets: Target[], seed: SeedManifest): string {
  const blobs = seed.modules.length * seed.versions.length;
  const rows = AIMS.map((a) => [
    a.aim.replace('100,000', blobs.toLocaleString('en-US')),
    ...targets.map((t) => {
      if (a.kind === 'startup') {
        const ms = Math.max(...t.instances.map((i) => i.startupMs));
        return `${secs(ms)}: ${ms < a.limit ? 'met' : '**missed**'}`;
      }
      const m = measures.find((x) => x.target === t && x.scenario.id === a.scenario && x.runs.length > 0);
      if (!m) return 'not run';
      if (m.scenario.connections !== 50 && a.kind === 'p99') return `${fmtMs(medianOf(m, (r) => r.p99Ms))} ms at ${m.scenario.connections} connections`;
      if (a.kind === 'p99') {
        const p99 = medianOf(m, (r) => r.p99Ms);
        // The bare server's p99 at the same connections, measured around each round: what this
        // machine's own stalls (a VM's stolen time, say) put on any server's tail in that run.
        const bare = m.baselines.length ? ` (bare server beside it: ${fmtMs(median(m.baselines.map((r) => r.p99Ms)))} ms)` : '';
        return `${fmtMs(p99)} ms: ${p99 < a.limit ? 'met' : '**missed**'}${bare}`;
      }
      const r = bareRatio(m);
      return `${ratio(r)}: ${r >= a.limit ? 'met' : '**missed**'}`;
    }),
  ]);
  return ['Aims (medians of this run; ratios as in "vs bare" above; start-up: spawn to the first successful /readyz, the slowest instance):', '', markdownTable(['aim', ...targets.map((t) => t.label)], rows)].join('\n');
}

function resultsMarkdown(
  measures: Measure[],
  targets: Target[],
  ctx: {
    tool: LoadTool;
    duration: number;
    pairSeconds: number;
    runs: number;
    pinned: boolean;
    seed: SeedManifest;
    bodyBytes: number;
    postgres: BenchPostgres | null;
    started: { label: string; proc: TerraceProcess }[];
    emptyStartupMs: number;
  },
  skipped: string[],
): string {
  const measured = measures.filter((m) => m.runs.length > 0);
  const rows = measured.map((m) => {
    const rps = medianOf(m, (r) => r.rps);
    const failures = m.runs.reduce((s, r) => s + r.failures + (r.requests === 0 ? 1 : 0), 0);
    return [
      m.scenario.title,
      m.target?.label ?? '–',
      String(m.scenario.connections),
      fmtInt(rps),
      ratio(bareRatio(m)),
      m.baselines.length ? fmtInt(median(m.baselines.map((r) => r.rps))) : '–',
      fmtMs(medianOf(m, (r) => r.p50Ms)),
      fmtMs(medianOf(m, (r) => r.p90Ms)),
      fmtMs(medianOf(m, (r) => r.p99Ms)),
      m.runs.map((r) => fmtInt(r.rps)).join(' / '),
      failures ? `**${failures} failed**` : '0',
    ];
  });
  const blobs = ctx.seed.modules.length * ctx.seed.versions.length;
  const lines = [
    `${ctx.seed.modules.length.toLocaleString('en-US')} modules × ${ctx.seed.versions.length} versions (${blobs.toLocaleString('en-US')} blobs); ${ctx.tool}, ${ctx.runs} round${ctx.runs === 1 ? '' : 's'} × ${ctx.duration} s per scenario; ` +
      `${ctx.pinned ? `every Terrace process${ctx.postgres ? ', PostgreSQL' : ''} and the bare server on core 0, load generators on core 1` : 'unpinned'}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}.`,
    `Bare body: ${ctx.bodyBytes} bytes (the median-sized real /versions answer of ${ctx.seed.versions.length}-version modules).` +
      (ctx.postgres ? ` PostgreSQL seeded in ${ctx.postgres.seedSeconds.toFixed(1)} s.` : ''),
    '',
    'Start-up (spawn to the first successful /readyz) and RSS after the load runs:',
    '',
    ...ctx.started.map(({ label, proc }) => `- ${label}: ${secs(proc.startupMs)}` + (proc.rssAfter ? `, ${fmtMiB(proc.rssAfter)}` : '')),
    `- for reference, an empty SQLite data dir: ${secs(ctx.emptyStartupMs)} (node loading the server bundle and the store's first statements: start-up that does not depend on the registry)`,
    `"vs bare": each round's req/s over the bare server's measured around it, ${halfPair(ctx.pairSeconds)} s right before and ${halfPair(ctx.pairSeconds)} s right after (median over rounds; "bare beside it" is the median of those means). The bare row is its own measurement, once per round. The bare server ends its answers together once the requests read in one go are handled, as Terrace's lean path does (src/http/write-batch.ts); the row after it is the same server ending each answer at once, the baseline of the runs before 2026-11-26, measured beside the first as Terrace is.`,
    '',
    markdownTable(
      ['scenario', 'store', 'conns', 'req/s (median)', 'vs bare', 'bare beside it', 'p50 ms', 'p90 ms', 'p99 ms', 'req/s per round', 'errors'],
      rows,
      ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    ),
  ];
  if (targets.length > 1) {
    // The same figures side by side: median req/s, ratio to bare and p99 per target.
    const scenarios = [...new Map(measured.filter((m) => m.target).map((m) => [m.scenario.id, m.scenario])).values()];
    const side = scenarios.map((s) => [
      s.title,
      ...targets.map((t) => {
        const m = measured.find((x) => x.target === t && x.scenario.id === s.id);
        return m ? `${fmtInt(medianOf(m, (r) => r.rps))} (${ratio(bareRatio(m))}), p99 ${fmtMs(medianOf(m, (r) => r.p99Ms))}` : '–';
      }),
    ]);
    lines.push('', 'Side by side: req/s (× bare), p99 ms:', '', markdownTable(['scenario', ...targets.map((t) => t.label)], side));
  }
  const b = targets.find((t) => t.id === 'B');
  if (b) {
    lines.push('', '[B] against this tree, same run (median req/s and p99):');
    for (const mb of measured.filter((m) => m.target === b)) {
      const ma = measured.find((m) => m.target?.id === 'sqlite' && m.scenario.id === mb.scenario.id);
      if (!ma) continue;
      const rpsA = medianOf(ma, (r) => r.rps);
      const rpsB = medianOf(mb, (r) => r.rps);
      lines.push(`- ${mb.scenario.id}: ${(rpsB / rpsA).toFixed(2)}× throughput (${fmtInt(rpsA)} → ${fmtInt(rpsB)} req/s), p99 ${fmtMs(medianOf(ma, (r) => r.p99Ms))} → ${fmtMs(medianOf(mb, (r) => r.p99Ms))} ms`);
    }
  }
  if (skipped.length) lines.push('', ...skipped.map((s) => `Skipped: ${s}`));
  return lines.join('\n');
}

type Choice<T extends string> = T | 'both';
function choice<T extends string>(name: string, raw: string | undefined, allowed: readonly T[], def: Choice<T>): Choice<T> {
  const v = raw ?? def;
  if (v !== 'both' && !allowed.includes(v as T)) throw new Error(`--${name} must be ${allowed.join(', ')} or both, got "${v}"`);
  return v as Choice<T>;
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), FLAGS);
  if (flags.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const env = (name: string) => process.env[`BENCH_${name.toUpperCase().replace(/-/g, '_')}`];
  const str = (name: keyof typeof FLAGS) => (flags[name] as string | undefined) ?? env(name);
  const bool = (name: keyof typeof FLAGS) => flags[name] === true || ['1', 'true', 'yes'].includes(env(name) ?? '');
  const quick = bool('quick');
  const duration = Math.round(numberOption(flags, 'duration', 'BENCH_DURATION', quick ? 2 : 10));
  const warmup = Math.round(numberOption(flags, 'warmup', 'BENCH_WARMUP', quick ? 1 : 3));
  const pairSeconds = Math.round(numberOption(flags, 'pair', 'BENCH_PAIR', Math.max(1, Math.round(duration / 2))));
  const connections = Math.round(numberOption(flags, 'connections', 'BENCH_CONNECTIONS', 50));
  const runs = Math.round(numberOption(flags, 'runs', 'BENCH_RUNS', quick ? 1 : 3));
  const toolRaw = str('tool') ?? defaultTool();
  if (toolRaw !== 'wrk' && toolRaw !== 'autocannon') throw new Error(`--tool must be wrk or autocannon, got ${toolRaw}`);
  const tool: LoadTool = toolRaw;
  if (tool === 'wrk' && !hasWrk) throw new Error('wrk is not installed (apt-get install wrk), use --tool autocannon');
  const only = str('only')?.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = only?.filter((id) => id !== 'tf-init' && !SCENARIO_IDS.includes(id)) ?? [];
  if (unknown.length) throw new Error(`--only: unknown scenario ${unknown.join(', ')}; known: ${SCENARIO_IDS.join(', ')}, tf-init`);
  const scenarioIds = only ? SCENARIO_IDS.filter((id) => only.includes(id)) : SCENARIO_IDS;
  const wantTfInit = only ? only.includes('tf-init') : !quick;

  const pg = postgresAvailable();
  const storeChoice = choice('store', str('store'), ['sqlite', 'postgres'] as const, pg.ok ? 'both' : 'sqlite');
  if (!pg.ok && storeChoice !== 'sqlite') throw new Error(`--store ${storeChoice}: ${pg.why}`);
  if (!pg.ok) log(`PostgreSQL is not measured: ${pg.why}`);
  const useSqlite = storeChoice !== 'postgres';
  const usePostgres = storeChoice !== 'sqlite';
  const instancesChoice = choice('instances', str('instances'), ['1', '2'] as const, quick ? '1' : 'both');
  if (!usePostgres && instancesChoice !== '1') log('two instances need PostgreSQL (a SQLite store belongs to one process): SQLite runs one');
  const seedOpts: SeedOptions = {
    ...DEFAULT_SEED,
    orgs: Math.round(numberOption(flags, 'orgs', 'BENCH_ORGS', DEFAULT_SEED.orgs)),
    modulesPerOrg: Math.round(numberOption(flags, 'modules-per-org', 'BENCH_MODULES_PER_ORG', DEFAULT_SEED.modulesPerOrg)),
    versionsPerModule: Math.round(numberOption(flags, 'versions', 'BENCH_VERSIONS', DEFAULT_SEED.versionsPerModule)),
  };
  const large = !quick && !bool('no-large') && !only;
  const prime = !bool('no-prime');
  const largeMiB = Math.round(numberOption(flags, 'large-mib', 'BENCH_LARGE_MIB', 500));
  const slowRaw = str('slow-client-mibps') ?? '50';
  const slowClientMiBps = Number(slowRaw) > 0 ? Number(slowRaw) : undefined;
  const canPin = !bool('no-pin') && hasTaskset && cpuCount() >= 2;
  const serverCpu = canPin ? 0 : undefined;
  const loadCpu = canPin ? 1 : undefined;
  if (!canPin) log(hasTaskset ? 'not pinning (fewer than 2 CPUs or --no-pin): numbers will be noisier' : 'taskset not found: processes are not pinned');
  const compare = str('compare');
  if (compare && !useSqlite) throw new Error('--compare runs the other tree on SQLite: use --store sqlite or both');

  const { dir: seedDir, manifest, reused } = await ensureSeed(seedOpts, bool('reseed'));
  log(reused ? `reusing the seed in ${seedDir}` : `seeded ${manifest.modules.length} modules × ${manifest.versions.length} versions in ${manifest.seconds.toFixed(1)} s (${seedDir})`);
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-run-'));

  let postgres: BenchPostgres | null = null;
  let bare: Awaited<ReturnType<typeof startBare>> | undefined;
  const processes: TerraceProcess[] = [];
  const started: { label: string; proc: TerraceProcess }[] = [];
  const profileDir = path.join(runDir, 'profile');
  try {
    if (usePostgres) {
      postgres = await startSeededPostgres(seedDir, seedOpts, serverCpu);
      log(`PostgreSQL seeded in ${postgres.seedSeconds.toFixed(1)} s (postmaster pid ${postgres.pid})`);
    }
    const profileArgs = () => (bool('profile') && processes.length === 0 ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
    const start = async (label: string, opts: Omit<Parameters<typeof startTerrace>[0], 'cpu'>) => {
      const t = await startTerrace({ ...opts, cpu: serverCpu, nodeArgs: profileArgs() });
      processes.push(t);
      started.push({ label, proc: t });
      log(`Terrace (${label}) up at ${t.url} in ${secs(t.startupMs)} (pid ${t.pid})`);
      return t;
    };
    // SQLite: a private copy of the seed's database. PostgreSQL: every instance on one database,
    // one data dir whose blob directory is the seed's (shared), and one key.
    const sqliteDir = path.join(runDir, 'data');
    const pgDir = path.join(runDir, 'data-pg');
    if (useSqlite) copySeed(seedDir, sqliteDir);
    if (postgres) shareSeedBlobs(seedDir, pgDir);
    const pgShared = postgres ? { dataDir: pgDir, databaseUrl: postgres.url, secretKey: SHARED_SECRET_KEY } : null;

    const targets: Target[] = [];
    let emptyStartupMs = NaN;
    const skipped: string[] = [];
    const measures: Measure[] = [];
    let bodyBytes = 0;
    if (scenarioIds.length > 0) {
      if (useSqlite) {
        targets.push({ id: 'sqlite', label: 'SQLite', instances: [await start('SQLite', { dataDir: sqliteDir })] });
        if (compare) {
          const root = path.resolve(compare);
          if (!fs.existsSync(path.join(root, 'src/main.ts'))) throw new Error(`--compare: no src/main.ts in ${root}`);
          const dataDirB = path.join(runDir, 'data-b');
          copySeed(seedDir, dataDirB);
          targets.push({ id: 'B', label: '[B] SQLite', instances: [await start(`[B] ${root}`, { root, dataDir: dataDirB })] });
        }
      }
      if (pgShared) {
        const first = await start(instancesChoice === '1' ? 'PostgreSQL' : 'PostgreSQL, first instance', pgShared);
        if (instancesChoice !== '2') targets.push({ id: 'postgres', label: 'PostgreSQL', instances: [first] });
        if (instancesChoice !== '1') targets.push({ id: 'postgres-2', label: 'PostgreSQL, 2 instances', instances: [first, await start('PostgreSQL, second instance', pgShared)] });
      }
      const primary = targets[0]!.instances[0]!;
      // The same start on an empty data dir: what start-up costs whatever the registry's size
      // (node, tsx compiling the sources, migrations check), beside the seeded starts above.
      const emptyDir = path.join(runDir, 'data-empty');
      fs.mkdirSync(emptyDir);
      const empty = await startTerrace({ dataDir: emptyDir, cpu: serverCpu });
      await empty.stop();
      emptyStartupMs = empty.startupMs;
      log(`Terrace on an empty SQLite data dir up in ${secs(emptyStartupMs)}`);

      const built = buildScenarios(manifest, connections);
      const scenarios = built.terrace.filter((s) => scenarioIds.includes(s.id));
      const excluded = new Set<string>();
      for (const s of scenarios) {
        for (const t of targets) {
          for (const inst of t.instances) {
            const problem = s.paths.length === 0 ? 'no paths' : await probe(inst.url, s);
            if (!problem) continue;
            // Only the ordinary-user scenarios depend on the (still changing) access model.
            if (s.headers?.Authorization !== `Bearer ${READER_TOKEN}`) throw new Error(`scenario ${s.id} on ${t.label}: ${problem}`);
            if (!excluded.has(s.id)) skipped.push(`${s.title}: ${problem} on ${t.label} (has the access model changed?)`);
            excluded.add(s.id);
          }
        }
      }

      // The bare server sends exactly the bytes of a real /versions answer: the median-sized one
      // of a sample (answers differ by the modules' providers and submodules).
      const sample: Buffer[] = [];
      for (const p of built.terrace.find((s) => s.id === 'versions')!.paths.slice(0, 51)) {
        const res = await fetch(`${primary.url}${p}`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
        if (res.status !== 200) throw new Error(`${p} answered ${res.status}`);
        sample.push(Buffer.from(await res.arrayBuffer()));
      }
      const body = sample.sort((a, b) => a.length - b.length)[sample.length >> 1]!;
      bodyBytes = body.length;
      const bodyFile = path.join(runDir, 'versions-body.json');
      fs.writeFileSync(bodyFile, body);
      bare = await startBare(bodyFile, serverCpu);

      measures.push({ scenario: built.bare, target: null, runs: [], baselines: [] });
      measures.push({ scenario: built.bareDirect, target: null, runs: [], baselines: [] });
      for (const s of scenarios.filter((x) => !excluded.has(x.id))) {
        for (const t of targets) {
          // One connection cannot be shared between two instances; unqueued latency is the single instance's figure.
          if (s.connections < t.instances.length) continue;
          measures.push({ scenario: s, target: t, runs: [], baselines: [] });
        }
      }
      const pids = [bare.pid, ...processes.map((p) => p.pid)];
      // Every server shares core 0: none may still be working off a previous scenario, and
      // PostgreSQL (pinned there too) may not be vacuuming or checkpointing what one wrote.
      const settle = async () => {
        const all = postgres ? [...pids, postgres.pid, ...childPids(postgres.pid)] : pids;
        const waited = Math.max(...(await Promise.all(all.map((pid) => waitIdle(pid)))));
        if (waited > 2000) log(`waited ${(waited / 1000).toFixed(1)} s for the servers to drain queued requests`);
      };
      log(`${tool}: ${measures.length} measurements × ${runs} rounds × ${duration} s (+${warmup} s warm-up in round 1, each with ${halfPair(pairSeconds)} s of the bare server before and after it)`);
      for (let round = 1; round <= runs; round++) {
        for (const m of measures) {
          const spec = { paths: m.scenario.paths, headers: m.scenario.headers, connections: m.scenario.connections, tool, cpu: loadCpu };
          const go = (durationSeconds: number) => (m.target ? loadTarget(m.target, { ...spec, durationSeconds }) : runLoad({ ...spec, baseUrl: bare!.url, durationSeconds }));
          await settle();
          // Measured is the steady state of a registry serving its working set: in round 1 every
          // path is requested once first, on each instance, so no scenario starts on a cold cache.
          if (round === 1 && m.target && prime) {
            for (const inst of m.target.instances) await primePaths(inst.url, m.scenario.paths, m.scenario.headers);
            await settle();
          }
          if (round === 1 && warmup > 0) {
            await go(warmup);
            await settle();
          }
          const bareLoad = () => runLoad({ ...spec, paths: built.bare.paths, headers: undefined, connections: built.bare.connections, baseUrl: bare!.url, durationSeconds: halfPair(pairSeconds) });
          const before = m.scenario !== built.bare ? await bareLoad() : null;
          if (before) await settle();
          const res = await go(duration);
          m.runs.push(res);
          if (before) {
            await settle();
            const after = await bareLoad();
            m.baselines.push({ ...before, rps: (before.rps + after.rps) / 2, p99Ms: (before.p99Ms + after.p99Ms) / 2 });
          }
          log(
            `round ${round}/${runs} ${m.scenario.id.padEnd(15)} ${(m.target?.label ?? '').padEnd(24)} ${fmtInt(res.rps).padStart(7)} req/s  p50 ${fmtMs(res.p50Ms)} ms  p99 ${fmtMs(res.p99Ms)} ms` +
              (m.baselines.length === m.runs.length ? `  ${ratio(res.rps / m.baselines.at(-1)!.rps)} × bare (${fmtInt(m.baselines.at(-1)!.rps)} req/s, p99 ${fmtMs(m.baselines.at(-1)!.p99Ms)} ms around it)` : '') +
              (res.failures ? `  ${res.failures} FAILED` : ''),
          );
        }
      }
      for (const p of processes) p.rssAfter = readRss(p.pid);
    }

    await bare?.stop();
    for (const p of processes) await p.stop();

    // terraform get: its own TLS instance per store (Terraform talks only HTTPS to registry hosts),
    // on the same data as the measured instances (stopped by now), with the access log on.
    const tfInit: TerraformInitResult[] = [];
    if (wantTfInit) {
      const why = terraformInitAvailable();
      if (why) skipped.push(`terraform get with 50 modules: ${why}`);
      else {
        if (useSqlite) tfInit.push(await runTerraformInit({ label: 'SQLite', manifest, dataDir: sqliteDir, cpu: serverCpu, workDir: path.join(runDir, 'tf-sqlite') }));
        if (pgShared) tfInit.push(await runTerraformInit({ label: 'PostgreSQL', manifest, ...pgShared, cpu: serverCpu, workDir: path.join(runDir, 'tf-postgres') }));
      }
    }

    let profileSummary = '';
    if (bool('profile')) {
      const files = fs.existsSync(profileDir) ? fs.readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')) : [];
      if (files.length === 0) log('no CPU profile was written');
      else {
        const keep = path.join(os.tmpdir(), `terrace-bench-${Date.now()}.cpuprofile`);
        fs.copyFileSync(path.join(profileDir, files[0]!), keep);
        profileSummary = summarize(keep, 25);
        log(`CPU profile of ${targets[0]?.label ?? 'Terrace'} saved to ${keep} (open in Chrome DevTools → Performance)`);
      }
    }

    let largeResult: LargeUploadResult | null = null;
    if (large) {
      log(`large archive: ${largeMiB} MiB upload and download, sampling server RSS`);
      largeResult = await runLargeUpload({ sizeMiB: largeMiB, cpu: serverCpu, slowClientMiBps });
    }

    const parts: string[] = [];
    if (measures.length) {
      parts.push(resultsMarkdown(measures, targets, { tool, duration, pairSeconds, runs, pinned: canPin, seed: manifest, bodyBytes, postgres, started, emptyStartupMs }, skipped), '', aimsTable(measures, targets, manifest));
    } else if (skipped.length) parts.push(skipped.map((s) => `Skipped: ${s}`).join('\n'));
    if (tfInit.length) parts.push('', formatTerraformInit(tfInit));
    if (largeResult) parts.push('', 'Large archive (server RSS sampled every 100 ms):', '', '```', formatLargeUpload(largeResult), '```');
    if (profileSummary) parts.push('', profileSummary);
    const report = parts.join('\n');
    process.stdout.write(`\n${report}\n`);
    const out = str('out');
    if (out) {
      fs.writeFileSync(out, `${report}\n`);
      log(`results written to ${out}`);
    }
    if (measures.some((m) => m.runs.some((x) => x.failures > 0 || x.requests === 0)) || (largeResult && !largeUploadOk(largeResult)) || tfInit.some((r) => !r.ok)) process.exitCode = 1;
  } finally {
    await bare?.stop();
    for (const p of processes) await p.stop();
    await stopAll();
    removeScratch();
    fs.rmSync(runDir, { recursive: true, force: true });
  }
}

main().catch(async (err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  await stopAll();
  process.exit(1);
});

/** Requests every path once, 16 at a time, and fails on any answer but 2xx/3xx. */
async function primePaths(baseUrl: string, paths: string[], headers: Record<string, string> | undefined): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const p = paths[next++]!;
      const res = await fetch(`${baseUrl}${p}`, { headers, redirect: 'manual' });
      await res.arrayBuffer();
      if (res.status >= 400) throw new Error(`priming ${p}: ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}
