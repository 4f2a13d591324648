// Memory while a large module is published and fetched: a real gzip'd tar whose one big file is
// incompressible random data (generated streaming, never held in memory) is PUT to the upload
// URL from disk, then fetched through the download endpoint and archive URL and checked by
// sha256, while the server's RSS is sampled from /proc/<pid>/status every 100 ms.
//
//   npx tsx bench/large-upload.ts [--size-mib 500] [--reference-mib 100] [--slow-client-mibps 50] [--repeat 0] [--no-pin]
//
// A reference archive (a fifth of the size) goes through the same server first: memory is flat
// when the large archive raises the peak no more than the small one did.
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { openSqlite } from '../src/db/index.js';
import { ADMIN_TOKEN, MiB, RssSampler, cpuCount, fmtMiB, log, median, parseFlags, readRss, sleep } from './common.js';
import { startTerrace } from './terrace.js';

/** One archive published and fetched back, with the server's RSS around each transfer. */
export interface ArchiveRun {
  archiveBytes: number;
  /** Median RSS over the idle second before the upload. */
  baselineRss: number;
  uploadPeakRss: number;
  downloadPeakRss: number;
  uploadSeconds: number;
  downloadSeconds: number;
  sha256Matches: boolean;
  /** The same archive fetched by a client reading at a fixed, slow rate. */
  slowDownload?: { peakRss: number; seconds: number; mibps: number; sha256Matches: boolean };
}

export interface LargeUploadResult {
  /** A smaller archive through the same server first: memory that is flat does not grow with size. */
  reference: ArchiveRun;
  large: ArchiveRun;
  /** Further rounds of the large archive (--repeat): baselines that keep rising would be a leak. */
  repeats: ArchiveRun[];
  /** Where the upload's organization came from: the API, or rows written like the seeder's. */
  organizationVia: 'api' | 'direct insert';
}

const ORG = 'bench-large';
const MODULE = 'huge';
const PROVIDER = 'aws';
const VERSION = '1.0.0';

// ---------------------------------------------------------------------------------------------
// The tarball

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

/** A ustar header block for a regular file. */
function tarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(0o644, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii'); // checksum field counts as spaces while summing
  h.write('0', 156, 'ascii');
  h.write('ustar\u000000', 257, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

function padding(size: number): Buffer {
  return Buffer.alloc((512 - (size % 512)) % 512);
}

/** Streams the tar: main.tf, then `payloadBytes` of AES-CTR keystream (incompressible), then the end blocks. */
async function* tarStream(payloadBytes: number): AsyncGenerator<Buffer> {
  const mainTf = Buffer.from('variable "payload" {\n  default = "payload.bin"\n}\n');
  yield tarHeader('main.tf', mainTf.length);
  yield mainTf;
  yield padding(mainTf.length);
  yield tarHeader('payload.bin', payloadBytes);
  const cipher = createCipheriv('aes-256-ctr', randomBytes(32), randomBytes(16));
  const zeros = Buffer.alloc(MiB);
  for (let left = payloadBytes; left > 0; left -= zeros.length) {
    yield cipher.update(left >= zeros.length ? zeros : zeros.subarray(0, left));
  }
  yield padding(payloadBytes);
  yield Buffer.alloc(1024);
}

/** Creates (or reuses) the tarball; returns its path, size and sha256. */
export async function largeTarball(sizeMiB: number): Promise<{ file: string; size: number; sha256: string }> {
  const file = path.join(os.tmpdir(), `terrace-bench-large-${sizeMiB}mib.tar.gz`);
  const sidecar = `${file}.sha256`;
  try {
    const sha256 = fs.readFileSync(sidecar, 'utf8').trim();
    const { size } = fs.statSync(file);
    if (/^[0-9a-f]{64}$/.test(sha256)) return { file, size, sha256 };
  } catch {
    // not cached yet
  }
  log(`writing a ${sizeMiB} MiB module tarball to ${file} (once; reused by later runs)`);
  const hash = createHash('sha256');
  let size = 0;
  const tap = async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      hash.update(chunk);
      size += chunk.length;
      yield chunk;
    }
  };
  // The payload is sized so the compressed file (random data does not shrink) is sizeMiB.
  await pipeline(Readable.from(tarStream(sizeMiB * MiB - 4096)), zlib.createGzip({ level: 1 }), tap, fs.createWriteStream(`${file}.part`));
  fs.renameSync(`${file}.part`, file);
  const sha256 = hash.digest('hex');
  fs.writeFileSync(sidecar, `${sha256}\n`);
  return { file, size, sha256 };
}

// ---------------------------------------------------------------------------------------------
// HTTP against the server

async function api(base: string, method: string, p: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(base + p, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, Accept: 'application/vnd.api+json', 'Content-Type': 'application/vnd.api+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** PUTs a file as a stream with a Content-Length; resolves with the status and body. */
function putFile(url: string, file: string, size: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(size) } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    fs.createReadStream(file, { highWaterMark: MiB }).on('error', reject).pipe(req);
  });
}

/**
 * GETs a URL, streaming the body to nowhere while hashing it. With a rate limit (MiB/s) the
 * reader is a slow client: the server must then hold back rather than buffer the file.
 */
function fetchHashed(url: string, limitMiBps?: number): Promise<{ status: number; bytes: number; sha256: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const hash = createHash('sha256');
        let bytes = 0;
        const started = performance.now();
        const sink = new Writable({
          highWaterMark: 64 * 1024,
          write(chunk: Buffer, _enc, cb) {
            hash.update(chunk);
            bytes += chunk.length;
            if (!limitMiBps) return cb();
            const due = (bytes / (limitMiBps * MiB)) * 1000 - (performance.now() - started);
            if (due > 1) setTimeout(cb, due);
            else cb();
          },
        });
        pipeline(res, sink).then(() => resolve({ status: res.statusCode ?? 0, bytes, sha256: hash.digest('hex') }), reject);
      })
      .on('error', reject);
  });
}

/** The organization through the API when it exists; otherwise rows like the seeder's. */
async function ensureOrganization(base: string, dataDir: string): Promise<'api' | 'direct insert'> {
  const r = await api(base, 'POST', '/api/v2/organizations', {
    data: { type: 'organizations', attributes: { name: ORG, email: `owners@${ORG}.example.com` } },
  });
  if (r.status === 201) return 'api';
  if (r.status !== 404) throw new Error(`create organization: ${r.status} ${r.text}`);
  // No organizations endpoint yet: a second connection on the WAL database is safe while the
  // server runs. The site admin may manage any organization's modules.
  const store = openSqlite(path.join(dataDir, 'terrace.db'));
  try {
    await store.db
      .insertInto('organizations')
      .values({ id: 'org-benchlarge000001', name: ORG, name_lower: ORG, email: `owners@${ORG}.example.com`, attributes: '{}', created_at: new Date().toISOString() })
      .execute();
  } finally {
    await store.close();
  }
  return 'direct insert';
}

// ---------------------------------------------------------------------------------------------

export interface LargeUploadOptions {
  sizeMiB: number;
  /** Size of the reference archive published first (default a fifth of sizeMiB). */
  referenceMiB?: number;
  cpu?: number;
  /** Also fetch the large archive as a client reading at this many MiB/s. */
  slowClientMiBps?: number;
  /** Publish and fetch the large archive this many more times (default 0). */
  repeat?: number;
}

async function idleRss(pid: number): Promise<number> {
  await sleep(500);
  const idle: number[] = [];
  for (let i = 0; i < 10; i++) {
    idle.push(readRss(pid) ?? 0);
    await sleep(100);
  }
  return median(idle);
}

/** Creates version `version`, PUTs the tarball, then fetches it back through the protocol. */
async function publishAndFetch(
  server: { url: string; pid: number },
  version: string,
  tarball: { file: string; size: number; sha256: string },
  slowClientMiBps?: number,
): Promise<ArchiveRun> {
  const base = server.url;
  const ver = await api(base, 'POST', `/api/v2/organizations/${ORG}/registry-modules/private/${ORG}/${MODULE}/${PROVIDER}/versions`, {
    data: { type: 'registry-module-versions', attributes: { version } },
  });
  if (ver.status !== 201) throw new Error(`create version: ${ver.status} ${ver.text}`);
  const uploadUrl = String(ver.json.data.links.upload);
  if (!uploadUrl.startsWith(`${base}/`)) throw new Error(`upload URL ${uploadUrl} is not on ${base}`);

  const baselineRss = await idleRss(server.pid);
  const upSampler = new RssSampler(server.pid).start();
  const upStarted = performance.now();
  const put = await putFile(uploadUrl, tarball.file, tarball.size);
  const uploadSeconds = (performance.now() - upStarted) / 1000;
  const up = upSampler.stop();
  if (put.status !== 200) throw new Error(`upload: ${put.status} ${put.body}`);
  const published = JSON.parse(put.body) as { data: { attributes: { sha256: string } } };
  if (published.data.attributes.sha256 !== tarball.sha256) throw new Error('the server computed a different sha256 for the upload');

  const dl = await fetch(`${base}/v1/modules/${ORG}/${MODULE}/${PROVIDER}/${version}/download`, {
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    redirect: 'manual',
  });
  await dl.arrayBuffer();
  const get = dl.headers.get('x-terraform-get');
  if (dl.status !== 204 || !get) throw new Error(`download endpoint: ${dl.status}`);
  const archiveUrl = new URL(get, `${base}/v1/modules/`).toString();
  if (!archiveUrl.startsWith(`${base}/`)) throw new Error(`archive URL ${archiveUrl} is not on ${base}`);

  await sleep(500);
  const downSampler = new RssSampler(server.pid).start();
  const downStarted = performance.now();
  const fetched = await fetchHashed(archiveUrl);
  const downloadSeconds = (performance.now() - downStarted) / 1000;
  const down = downSampler.stop();
  if (fetched.status !== 200) throw new Error(`archive fetch: ${fetched.status}`);

  let slowDownload: ArchiveRun['slowDownload'];
  if (slowClientMiBps) {
    await sleep(1000);
    const slowSampler = new RssSampler(server.pid).start();
    const slowStarted = performance.now();
    const again = await fetchHashed(archiveUrl, slowClientMiBps);
    const seconds = (performance.now() - slowStarted) / 1000;
    slowDownload = { peakRss: slowSampler.stop().peak, seconds, mibps: slowClientMiBps, sha256Matches: again.sha256 === tarball.sha256 };
  }
  return {
    archiveBytes: tarball.size,
    baselineRss,
    uploadPeakRss: up.peak,
    downloadPeakRss: down.peak,
    uploadSeconds,
    downloadSeconds,
    sha256Matches: fetched.sha256 === tarball.sha256 && fetched.bytes === tarball.size,
    slowDownload,
  };
}

export async function runLargeUpload(opts: LargeUploadOptions): Promise<LargeUploadResult> {
  const referenceMiB = opts.referenceMiB ?? Math.max(1, Math.round(opts.sizeMiB / 5));
  const reference = await largeTarball(referenceMiB);
  const large = await largeTarball(opts.sizeMiB);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-large-data-'));
  const server = await startTerrace({
    dataDir,
    cpu: opts.cpu,
    env: { TERRACE_MAX_ARCHIVE_BYTES: String(Math.max(1024, opts.sizeMiB * 2) * MiB), TERRACE_ARCHIVE_URL_TTL: '3600' },
  });
  try {
    const organizationVia = await ensureOrganization(server.url, dataDir);
    const mod = await api(server.url, 'POST', `/api/v2/organizations/${ORG}/registry-modules`, {
      data: { type: 'registry-modules', attributes: { name: MODULE, provider: PROVIDER, 'registry-name': 'private' } },
    });
    if (mod.status !== 201) throw new Error(`create module: ${mod.status} ${mod.text}`);
    const referenceRun = await publishAndFetch(server, '0.1.0', reference);
    const largeRun = await publishAndFetch(server, '1.0.0', large, opts.slowClientMiBps);
    const repeats: ArchiveRun[] = [];
    for (let i = 1; i <= (opts.repeat ?? 0); i++) repeats.push(await publishAndFetch(server, `1.${i}.0`, large));
    return { reference: referenceRun, large: largeRun, repeats, organizationVia };
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Peak RSS during the run's upload or download. */
export const peakRss = (r: ArchiveRun) => Math.max(r.uploadPeakRss, r.downloadPeakRss, r.slowDownload?.peakRss ?? 0);

/** How far a run's transfers raised RSS above the idle RSS just before it. */
export const rssGrowth = (run: ArchiveRun) => peakRss(run) - run.baselineRss;

/**
 * Flat: the large archive raises RSS no more than the reference archive did, give or take 25% +
 * 16 MiB of noise, i.e. memory is bounded by buffers rather than growing with the bytes. (RSS
 * also stays a little higher after the first transfer, as the allocator keeps freed pages; a
 * leak would show as baselines that keep rising, which the report prints.)
 */
export function memoryIsFlat(r: LargeUploadResult): boolean {
  return rssGrowth(r.large) <= rssGrowth(r.reference) * 1.25 + 16 * MiB;
}

function formatRun(r: ArchiveRun): string[] {
  const rate = (s: number) => `${(r.archiveBytes / MiB / s).toFixed(0)} MiB/s`;
  const plus = (peak: number) => `${fmtMiB(peak)} (+${fmtMiB(peak - r.baselineRss)})`;
  return [
    `${fmtMiB(r.archiveBytes)} archive: baseline RSS ${fmtMiB(r.baselineRss)}; sha256 of the download ${r.sha256Matches ? 'matches' : 'DOES NOT MATCH'}`,
    `  upload   peak RSS ${plus(r.uploadPeakRss)}, ${r.uploadSeconds.toFixed(1)} s (${rate(r.uploadSeconds)}, incl. validation and inspection)`,
    `  download peak RSS ${plus(r.downloadPeakRss)}, ${r.downloadSeconds.toFixed(1)} s (${rate(r.downloadSeconds)})`,
    ...(r.slowDownload
      ? [
          `  slow client at ${r.slowDownload.mibps} MiB/s: peak RSS ${plus(r.slowDownload.peakRss)}, ${r.slowDownload.seconds.toFixed(1)} s, ` +
            `sha256 ${r.slowDownload.sha256Matches ? 'matches' : 'DOES NOT MATCH'}`,
        ]
      : []),
  ];
}

export function formatLargeUpload(r: LargeUploadResult): string {
  return [
    `organization created via ${r.organizationVia}`,
    ...formatRun(r.reference),
    ...formatRun(r.large),
    ...r.repeats.flatMap(formatRun),
    `memory ${memoryIsFlat(r) ? 'flat' : 'NOT flat'}: peak RSS +${fmtMiB(rssGrowth(r.reference))} over idle with the ${fmtMiB(r.reference.archiveBytes)} archive, ` +
      `+${fmtMiB(rssGrowth(r.large))} with the ${fmtMiB(r.large.archiveBytes)} one`,
  ].join('\n');
}

export function largeUploadOk(r: LargeUploadResult): boolean {
  return [r.reference, r.large, ...r.repeats].every((x) => x.sha256Matches && x.slowDownload?.sha256Matches !== false);
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), { 'size-mib': 'string', 'reference-mib': 'string', 'no-pin': 'bool', 'slow-client-mibps': 'string', repeat: 'string' });
  const sizeMiB = Number(flags['size-mib'] ?? 500);
  if (!Number.isInteger(sizeMiB) || sizeMiB < 1) throw new Error('--size-mib must be a whole number of MiB');
  const cpu = flags['no-pin'] || cpuCount() < 2 ? undefined : 0;
  const slowClientMiBps = Number(flags['slow-client-mibps'] ?? 50) || undefined;
  const referenceMiB = flags['reference-mib'] === undefined ? undefined : Number(flags['reference-mib']);
  const repeat = Number(flags.repeat ?? 0);
  const r = await runLargeUpload({ sizeMiB, referenceMiB, cpu, slowClientMiBps, repeat });
  process.stdout.write(`${formatLargeUpload(r)}\n`);
  if (!largeUploadOk(r)) process.exitCode = 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
