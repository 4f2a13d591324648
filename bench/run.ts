// The Terrace benchmark (run on demand, not a test):
//
//   npm run bench                 # full: 3 rounds × 10 s per scenario, 50 connections, + 500 MiB upload
//   npm run bench -- --quick      # 3 rounds × 2 s, no large upload: a minute or two
//
// Seeds (or reuses) a registry of 10,000 modules × 10 versions, starts Terrace as a separate
// process pinned to core 0 beside a bare node:http server answering a same-size fixed JSON body
// (also core 0, idle while Terrace is measured), and drives both from core 1 with wrk (or
// autocannon when wrk is missing). Rounds interleave the scenarios; each number reported is
// the median of the rounds, and throughput is also given as a ratio to the bare server
// measured in the same run. See docs/performance.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ADMIN_TOKEN,
  BENCH_DIR,
  READER_TOKEN,
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
import { formatLargeUpload, largeUploadOk, memoryIsFlat, rssGrowth, runLargeUpload, type LargeUploadResult } from './large-upload.js';
import { defaultTool, removeScratch, runLoad, type LoadResult, type LoadTool } from './load.js';
import { DEFAULT_SEED, copySeed, ensureSeed, type SeedManifest, type SeedOptions } from './seed.js';
import { startTerrace, type TerraceProcess } from './terrace.js';

const FLAGS = {
  quick: 'bool',
  duration: 'string',
  warmup: 'string',
  connections: 'string',
  runs: 'string',
  tool: 'string',
  only: 'string',
  reseed: 'bool',
  orgs: 'string',
  'modules-per-org': 'string',
  versions: 'string',
  'no-large': 'bool',
  'large-mib': 'string',
  'slow-client-mibps': 'string',
  'no-pin': 'bool',
  profile: 'bool',
  out: 'string',
  compare: 'string',
  help: 'bool',
} as const;

const HELP = `usage: npm run bench -- [options]        (every option also reads BENCH_<NAME> from the environment)
  --quick                 3 rounds × 2 s, 1 s warm-up, no large upload (a minute or two)
  --duration <s>          seconds measured per scenario and round (default 10; quick 2)
  --warmup <s>            warm-up seconds per scenario, first round only (default 3; quick 1)
  --connections <n>       concurrent connections (default 50)
  --runs <n>              rounds; each figure is the median over rounds (default 3)
  --tool wrk|autocannon   load generator (default: wrk when installed)
  --only <a,b>            scenarios to run besides bare: versions,download,search,search-1c,detail,reader
  --reseed                rebuild the cached seed
  --orgs <n> --modules-per-org <n> --versions <n>   seed size (default 100 × 100 × 10)
  --no-large              skip the large upload/download memory check
  --large-mib <n>         size of the large tarball (default 500; a fifth-size reference goes first)
  --slow-client-mibps <n> also download the large tarball at this rate (default 50; 0 = skip)
  --no-pin                do not pin processes to cores
  --profile               run Terrace under --cpu-prof and summarize where its time went
  --compare <dir>         also run the Terrace scenarios against the tree in <dir> (e.g. a patched
                          copy with node_modules linked), interleaved with this one: rows marked [B]
  --out <file>            also write the results (markdown) to this file`;

interface Scenario {
  id: string;
  title: string;
  target: 'bare' | 'terrace' | 'terrace-b';
  paths: string[];
  headers?: Record<string, string>;
  connections: number;
}

interface ScenarioResult {
  scenario: Scenario;
  runs: LoadResult[];
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

function buildScenarios(m: SeedManifest, connections: number): Scenario[] {
  const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  const modulePath = (x: { namespace: string; name: string; provider: string }) => `/v1/modules/${enc(x.namespace)}/${enc(x.name)}/${enc(x.provider)}`;
  const modules = shuffle(m.modules);
  const downloads: string[] = [];
  modules.forEach((x, i) => {
    for (let k = 0; k < 2; k++) downloads.push(`${modulePath(x)}/${m.versions[(i * 7 + k * 3) % m.versions.length]}/download`);
  });
  // Popular terms are searched more often than rare ones; one matches nothing.
  const searches: string[] = [];
  m.searchTerms.forEach((term, i) => {
    const weight = i < 6 ? 4 : i < 10 ? 2 : 1;
    for (let k = 0; k < weight; k++) searches.push(`/v1/modules/search?q=${enc(term)}`);
  });
  const readerModules = modules.filter((x) => m.readerNamespaces.includes(x.namespace));
  return [
    { id: 'bare', title: 'bare node:http, fixed JSON body', target: 'bare', paths: ['/'], connections },
    { id: 'versions', title: 'GET …/versions (site admin)', target: 'terrace', paths: modules.map((x) => `${modulePath(x)}/versions`), headers: auth, connections },
    { id: 'download', title: 'GET …/<version>/download → 204', target: 'terrace', paths: shuffle(downloads, 7), headers: auth, connections },
    { id: 'search', title: 'GET /v1/modules/search?q=…', target: 'terrace', paths: shuffle(searches, 9), headers: auth, connections },
    { id: 'search-1c', title: 'search, 1 connection', target: 'terrace', paths: shuffle(searches, 11), headers: auth, connections: 1 },
    { id: 'detail', title: 'GET …/<provider> (module detail)', target: 'terrace', paths: modules.map(modulePath), headers: auth, connections },
    {
      id: 'reader',
      title: 'GET …/versions (member, not admin)',
      target: 'terrace',
      paths: readerModules.map((x) => `${modulePath(x)}/versions`),
      headers: { Authorization: `Bearer ${READER_TOKEN}` },
      connections,
    },
  ];
}

/** One request per scenario before any load: the right status, or the scenario is left out. */
async function probe(base: string, s: Scenario): Promise<string | null> {
  const res = await fetch(base + s.paths[0], { headers: s.headers, redirect: 'manual' });
  await res.arrayBuffer();
  const want = s.id.startsWith('download') ? 204 : 200;
  return res.status === want ? null : `${s.paths[0]} answered ${res.status}, expected ${want}`;
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

/** Two significant digits, so small ratios do not all read 0.00. */
const ratio = (x: number) => (x >= 0.1 ? x.toFixed(2) : x.toPrecision(2));

function resultsMarkdown(
  results: ScenarioResult[],
  ctx: { tool: LoadTool; duration: number; runs: number; pinned: boolean; seed: SeedManifest; startupMs: number; bodyBytes: number; rssAfter: number | null },
  large: LargeUploadResult | null,
  skipped: string[],
): string {
  const bare = results.find((r) => r.scenario.id === 'bare');
  const bareRps = bare ? median(bare.runs.map((r) => r.rps)) : NaN;
  const rows = results.map(({ scenario, runs }) => {
    const rps = median(runs.map((r) => r.rps));
    const failures = runs.reduce((s, r) => s + r.failures + (r.requests === 0 ? 1 : 0), 0);
    return [
      scenario.title,
      String(scenario.connections),
      fmtInt(rps),
      scenario.id === 'bare' ? '1.00' : ratio(rps / bareRps),
      fmtMs(median(runs.map((r) => r.p50Ms))),
      fmtMs(median(runs.map((r) => r.p90Ms))),
      fmtMs(median(runs.map((r) => r.p99Ms))),
      runs.map((r) => fmtInt(r.rps)).join(' / '),
      failures ? `**${failures} failed**` : '0',
    ];
  });
  const lines = [
    `${ctx.seed.modules.length.toLocaleString('en-US')} modules × ${ctx.seed.versions.length} versions; ${ctx.tool}, ${ctx.runs} rounds × ${ctx.duration} s per scenario; ` +
      `${ctx.pinned ? 'Terrace and bare server on core 0, load generator on core 1' : 'unpinned'}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}.`,
    `Bare body: ${ctx.bodyBytes} bytes (the median-sized real /versions answer of ${ctx.seed.versions.length}-version modules). Terrace started in ${(ctx.startupMs / 1000).toFixed(1)} s on the seeded store` +
      (ctx.rssAfter ? `; its RSS after the load runs: ${fmtMiB(ctx.rssAfter)}.` : '.'),
    '',
    markdownTable(
      ['scenario', 'conns', 'req/s (median)', 'vs bare', 'p50 ms', 'p90 ms', 'p99 ms', 'req/s per round', 'errors'],
      rows,
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    ),
  ];
  const pairs = results.filter((r) => r.scenario.target === 'terrace-b');
  if (pairs.length) {
    lines.push('', '[B] against this tree, same run (median req/s and p99):');
    for (const b of pairs) {
      const a = results.find((r) => r.scenario.id === b.scenario.id.replace(/@B$/, ''));
      if (!a) continue;
      const rpsA = median(a.runs.map((r) => r.rps));
      const rpsB = median(b.runs.map((r) => r.rps));
      const p99A = median(a.runs.map((r) => r.p99Ms));
      const p99B = median(b.runs.map((r) => r.p99Ms));
      lines.push(`- ${a.scenario.id}: ${(rpsB / rpsA).toFixed(2)}× throughput (${fmtInt(rpsA)} → ${fmtInt(rpsB)} req/s), p99 ${fmtMs(p99A)} → ${fmtMs(p99B)} ms`);
    }
  }
  if (skipped.length) lines.push('', ...skipped.map((s) => `Skipped: ${s}`));
  if (large) lines.push('', 'Large archive (server RSS sampled every 100 ms):', '', '```', formatLargeUpload(large), '```');
  return lines.join('\n');
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), FLAGS);
  if (flags.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const env = (name: string) => process.env[`BENCH_${name.toUpperCase().replace(/-/g, '_')}`];
  const bool = (name: keyof typeof FLAGS) => flags[name] === true || ['1', 'true', 'yes'].includes(env(name) ?? '');
  const quick = bool('quick');
  const duration = Math.round(numberOption(flags, 'duration', 'BENCH_DURATION', quick ? 2 : 10));
  const warmup = Math.round(numberOption(flags, 'warmup', 'BENCH_WARMUP', quick ? 1 : 3));
  const connections = Math.round(numberOption(flags, 'connections', 'BENCH_CONNECTIONS', 50));
  const runs = Math.round(numberOption(flags, 'runs', 'BENCH_RUNS', 3));
  const toolRaw = (flags.tool as string | undefined) ?? env('tool') ?? defaultTool();
  if (toolRaw !== 'wrk' && toolRaw !== 'autocannon') throw new Error(`--tool must be wrk or autocannon, got ${toolRaw}`);
  const tool: LoadTool = toolRaw;
  if (tool === 'wrk' && !hasWrk) throw new Error('wrk is not installed (apt-get install wrk), use --tool autocannon');
  const only = ((flags.only as string | undefined) ?? env('only'))?.split(',').map((s) => s.trim()).filter(Boolean);
  const seedOpts: SeedOptions = {
    ...DEFAULT_SEED,
    orgs: Math.round(numberOption(flags, 'orgs', 'BENCH_ORGS', DEFAULT_SEED.orgs)),
    modulesPerOrg: Math.round(numberOption(flags, 'modules-per-org', 'BENCH_MODULES_PER_ORG', DEFAULT_SEED.modulesPerOrg)),
    versionsPerModule: Math.round(numberOption(flags, 'versions', 'BENCH_VERSIONS', DEFAULT_SEED.versionsPerModule)),
  };
  const large = !quick && !bool('no-large');
  const largeMiB = Math.round(numberOption(flags, 'large-mib', 'BENCH_LARGE_MIB', 500));
  const slowRaw = (flags['slow-client-mibps'] as string | undefined) ?? env('slow-client-mibps') ?? '50';
  const slowClientMiBps = Number(slowRaw) > 0 ? Number(slowRaw) : undefined;
  const canPin = !bool('no-pin') && hasTaskset && cpuCount() >= 2;
  const serverCpu = canPin ? 0 : undefined;
  const loadCpu = canPin ? 1 : undefined;
  if (!canPin) log(hasTaskset ? 'not pinning (fewer than 2 CPUs or --no-pin): numbers will be noisier' : 'taskset not found: processes are not pinned');

  const { dir: seedDir, manifest, reused } = await ensureSeed(seedOpts, bool('reseed'));
  log(reused ? `reusing the seed in ${seedDir}` : `seeded ${manifest.modules.length} modules × ${manifest.versions.length} versions in ${manifest.seconds.toFixed(1)} s (${seedDir})`);
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-run-'));
  const dataDir = path.join(runDir, 'data');
  copySeed(seedDir, dataDir);

  const compare = (flags.compare as string | undefined) ?? env('compare');
  let terrace: TerraceProcess | undefined;
  let terraceB: TerraceProcess | undefined;
  let bare: Awaited<ReturnType<typeof startBare>> | undefined;
  const profileDir = path.join(runDir, 'profile');
  try {
    terrace = await startTerrace({ dataDir, cpu: serverCpu, nodeArgs: bool('profile') ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [] });
    log(`Terrace up at ${terrace.url} in ${(terrace.startupMs / 1000).toFixed(1)} s (pid ${terrace.pid})`);
    if (compare) {
      const root = path.resolve(compare);
      if (!fs.existsSync(path.join(root, 'src/main.ts'))) throw new Error(`--compare: no src/main.ts in ${root}`);
      const dataDirB = path.join(runDir, 'data-b');
      copySeed(seedDir, dataDirB);
      terraceB = await startTerrace({ root, dataDir: dataDirB, cpu: serverCpu });
      log(`Terrace [B] from ${root} up at ${terraceB.url} in ${(terraceB.startupMs / 1000).toFixed(1)} s (pid ${terraceB.pid})`);
    }

    const allScenarios = buildScenarios(manifest, connections);
    let scenarios = allScenarios;
    if (only) {
      const unknown = only.filter((id) => !scenarios.some((s) => s.id === id));
      if (unknown.length) throw new Error(`--only: unknown scenario ${unknown.join(', ')}`);
      scenarios = scenarios.filter((s) => s.id === 'bare' || only.includes(s.id));
    }
    const skipped: string[] = [];
    const skippedIds = new Set<string>();
    if (terraceB) {
      // Each Terrace scenario right after its twin on the other tree, so both see the same noise.
      scenarios = scenarios.flatMap((s) => (s.target === 'terrace' ? [s, { ...s, id: `${s.id}@B`, title: `${s.title} [B]`, target: 'terrace-b' as const }] : [s]));
    }
    const urlOf = (s: Scenario) => (s.target === 'terrace' ? terrace!.url : s.target === 'terrace-b' ? terraceB!.url : bare!.url);
    for (const s of scenarios.filter((x) => x.target !== 'bare')) {
      const problem = s.paths.length === 0 ? 'no paths' : await probe(urlOf(s), s);
      if (problem) {
        // Only the ordinary-user scenario depends on the (still changing) access model.
        if (!s.id.startsWith('reader')) throw new Error(`scenario ${s.id}: ${problem}`);
        skipped.push(`${s.title}: ${problem} (has the access model changed?)`);
        skippedIds.add(s.id);
      }
    }
    scenarios = scenarios.filter((s) => !skippedIds.has(s.id));

    // The bare server sends exactly the bytes of a real /versions answer: the median-sized one
    // of a sample (answers differ by the modules' providers and submodules).
    const sample: Buffer[] = [];
    for (const p of allScenarios.find((s) => s.id === 'versions')!.paths.slice(0, 51)) {
      const res = await fetch(`${terrace.url}${p}`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
      if (res.status !== 200) throw new Error(`${p} answered ${res.status}`);
      sample.push(Buffer.from(await res.arrayBuffer()));
    }
    const body = sample.sort((a, b) => a.length - b.length)[sample.length >> 1]!;
    const bodyFile = path.join(runDir, 'versions-body.json');
    fs.writeFileSync(bodyFile, body);
    bare = await startBare(bodyFile, serverCpu);

    const results: ScenarioResult[] = scenarios.map((scenario) => ({ scenario, runs: [] }));
    const pids = [terrace.pid, bare.pid, ...(terraceB ? [terraceB.pid] : [])];
    // Both servers share a core: neither may still be working off a previous scenario.
    const settle = async () => {
      let waited = 0;
      for (const pid of pids) waited += await waitIdle(pid);
      if (waited > 2000) log(`waited ${(waited / 1000).toFixed(1)} s for the servers to drain queued requests`);
    };
    log(`${tool}: ${scenarios.length} scenarios × ${runs} rounds × ${duration} s (+${warmup} s warm-up in round 1)`);
    for (let round = 1; round <= runs; round++) {
      for (const r of results) {
        const s = r.scenario;
        const spec = {
          baseUrl: urlOf(s),
          paths: s.paths,
          headers: s.headers,
          connections: s.connections,
          tool,
          cpu: loadCpu,
        };
        await settle();
        if (round === 1 && warmup > 0) {
          await runLoad({ ...spec, durationSeconds: warmup });
          await settle();
        }
        const res = await runLoad({ ...spec, durationSeconds: duration });
        r.runs.push(res);
        log(
          `round ${round}/${runs} ${s.id.padEnd(11)} ${fmtInt(res.rps).padStart(7)} req/s  p50 ${fmtMs(res.p50Ms)} ms  p99 ${fmtMs(res.p99Ms)} ms` +
            (res.failures ? `  ${res.failures} FAILED` : ''),
        );
      }
    }
    const rssAfter = readRss(terrace.pid);
    const startupMs = terrace.startupMs;
    await bare.stop();
    await terrace.stop();
    terrace = undefined;
    await terraceB?.stop();
    terraceB = undefined;

    let profileSummary = '';
    if (bool('profile')) {
      const files = fs.existsSync(profileDir) ? fs.readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')) : [];
      if (files.length === 0) log('no CPU profile was written');
      else {
        const keep = path.join(os.tmpdir(), `terrace-bench-${Date.now()}.cpuprofile`);
        fs.copyFileSync(path.join(profileDir, files[0]!), keep);
        profileSummary = summarize(keep, 25);
        log(`CPU profile saved to ${keep} (open in Chrome DevTools → Performance)`);
      }
    }

    let largeResult: LargeUploadResult | null = null;
    if (large) {
      log(`large archive: ${largeMiB} MiB upload and download, sampling server RSS`);
      largeResult = await runLargeUpload({ sizeMiB: largeMiB, cpu: serverCpu, slowClientMiBps });
    }

    const md = resultsMarkdown(
      results,
      { tool, duration, runs, pinned: canPin, seed: manifest, startupMs, bodyBytes: body.length, rssAfter },
      largeResult,
      skipped,
    );
    const verdict = aims(results, largeResult);
    const report = [md, '', verdict, ...(profileSummary ? ['', profileSummary] : [])].join('\n');
    process.stdout.write(`\n${report}\n`);
    const out = (flags.out as string | undefined) ?? env('out');
    if (out) {
      fs.writeFileSync(out, `${report}\n`);
      log(`results written to ${out}`);
    }
    if (results.some((r) => r.runs.some((x) => x.failures > 0 || x.requests === 0)) || (largeResult && !largeUploadOk(largeResult))) process.exitCode = 1;
  } finally {
    await bare?.stop();
    await terrace?.stop();
    await terraceB?.stop();
    await stopAll();
    removeScratch();
    fs.rmSync(runDir, { recursive: true, force: true });
  }
}

/** The aims, checked against this run. */
function aims(results: ScenarioResult[], large: LargeUploadResult | null): string {
  const get = (id: string) => results.find((r) => r.scenario.id === id);
  const rps = (id: string) => {
    const r = get(id);
    return r ? median(r.runs.map((x) => x.rps)) : NaN;
  };
  const p99 = (id: string) => {
    const r = get(id);
    return r ? median(r.runs.map((x) => x.p99Ms)) : NaN;
  };
  const bare = rps('bare');
  const lines = ['Aims:'];
  const mark = (ok: boolean) => (ok ? 'met   ' : 'MISSED');
  for (const id of ['versions', 'download']) {
    if (!get(id)) continue;
    const r = rps(id) / bare;
    lines.push(`- ${mark(r >= 0.5)} ${id} ≥ 0.5 × bare throughput: ${ratio(r)}`);
  }
  if (get('search')) lines.push(`- ${mark(p99('search') < 20)} search p99 < 20 ms at ${get('search')!.scenario.connections} connections: ${fmtMs(p99('search'))} ms`);
  if (get('search-1c')) lines.push(`- ${mark(p99('search-1c') < 20)} search p99 < 20 ms at 1 connection: ${fmtMs(p99('search-1c'))} ms`);
  if (large) {
    lines.push(
      `- ${mark(memoryIsFlat(large))} memory flat while a ${fmtMiB(large.large.archiveBytes)} archive is uploaded and downloaded: ` +
        `peak +${fmtMiB(rssGrowth(large.large))} over idle (a ${fmtMiB(large.reference.archiveBytes)} archive: +${fmtMiB(rssGrowth(large.reference))})`,
    );
  }
  return lines.join('\n');
}

main().catch(async (err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  await stopAll();
  process.exit(1);
});

