// Server memory while a large state goes through the upload URL and comes back, sealed at rest
// (encryption is always on: every state blob gets its own data key). Terrace runs as its own
// process; its RSS is sampled from /proc/<pid>/status every 50 ms during the PUT to the
// hosted-state-upload-url and during the GET of the hosted-state-download-url. The state is
// generated streaming (bench/big-state.ts), hashed in one pass and uploaded in another; the
// download is hashed as it arrives and compared.
//
//   npx tsx bench/encrypted-state-memory.ts [--state-mib 500] [--reference-mib 100]
//
// A reference state (a fifth of the size) goes through the same server first: memory is flat
// when the large state raises the peak no more than the small one did. See docs/performance.md,
// "Encrypted state".
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { bigStateDigest, bigStateStream } from './big-state.js';
import { ADMIN_TOKEN, MiB, RssSampler, fmtMiB, idleRss, log, parseFlags, stopAll } from './common.js';
import { startTerrace } from './terrace.js';

export interface StateTransfer {
  stateBytes: number;
  baselineRss: number;
  uploadPeakRss: number;
  downloadPeakRss: number;
  uploadSeconds: number;
  downloadSeconds: number;
  md5Matches: boolean;
  /** The state version, so a caller can find its stored blob. */
  stateVersionId: string;
}

export interface TargetServer {
  url: string;
  pid: number;
  token: string;
}

async function api(s: TargetServer, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(s.url + p, {
    method,
    headers: { Authorization: `Bearer ${s.token}`, 'Content-Type': 'application/vnd.api+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

function putStream(url: string, body: Readable, size: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', agent: false, headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(size) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    body.on('error', reject).pipe(req);
  });
}

function getHashed(url: string): Promise<{ status: number; md5: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        const md5 = createHash('md5');
        let bytes = 0;
        res.on('data', (d: Buffer) => {
          md5.update(d);
          bytes += d.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, md5: md5.digest('hex'), bytes }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/**
 * Creates an organization's workspace (once per name), a pending state version of stateBytes,
 * PUTs the state to its upload URL and GETs it back, sampling the server's RSS throughout.
 */
export async function measureStateTransfer(s: TargetServer, stateBytes: number, name: string): Promise<StateTransfer> {
  const orgs = await api(s, 'GET', '/api/v2/organizations');
  if (!orgs.data.some((o: any) => o.id === 'state-memory' || o.attributes?.name === 'state-memory')) {
    await api(s, 'POST', '/api/v2/organizations', { data: { type: 'organizations', attributes: { name: 'state-memory', email: 'bench@example.com' } } });
  }
  const ws = await api(s, 'POST', '/api/v2/organizations/state-memory/workspaces', { data: { type: 'workspaces', attributes: { name } } });
  await api(s, 'POST', `/api/v2/workspaces/${ws.data.id}/actions/lock`, {});
  const seed = `state-memory-${name}`;
  const digest = await bigStateDigest(stateBytes, seed);
  const created = await api(s, 'POST', `/api/v2/workspaces/${ws.data.id}/state-versions`, {
    data: { type: 'state-versions', attributes: { serial: 1, md5: digest.md5, lineage: 'big-state' } },
  });
  const uploadUrl: string = created.data.attributes['hosted-state-upload-url'];

  const baselineRss = await idleRss(s.pid);
  let sampler = new RssSampler(s.pid, 50).start();
  let started = performance.now();
  const up = await putStream(uploadUrl, bigStateStream(stateBytes, seed), digest.size);
  const uploadSeconds = (performance.now() - started) / 1000;
  const uploadPeakRss = sampler.stop().peak;
  if (up.status !== 200) throw new Error(`state upload: ${up.status} ${up.text.slice(0, 300)}`);

  const sv = await api(s, 'GET', `/api/v2/state-versions/${created.data.id}`);
  await idleRss(s.pid);
  sampler = new RssSampler(s.pid, 50).start();
  started = performance.now();
  const down = await getHashed(sv.data.attributes['hosted-state-download-url']);
  const downloadSeconds = (performance.now() - started) / 1000;
  const downloadPeakRss = sampler.stop().peak;
  if (down.status !== 200) throw new Error(`state download: ${down.status}`);
  await api(s, 'POST', `/api/v2/workspaces/${ws.data.id}/actions/unlock`, {});
  return {
    stateBytes: digest.size,
    baselineRss,
    uploadPeakRss,
    downloadPeakRss,
    uploadSeconds,
    downloadSeconds,
    md5Matches: down.md5 === digest.md5 && down.bytes === digest.size,
    stateVersionId: created.data.id,
  };
}

function row(label: string, r: StateTransfer): string {
  const mibps = (sec: number) => `${(r.stateBytes / MiB / sec).toFixed(0)} MiB/s`;
  return [
    `| ${label} | ${fmtMiB(r.stateBytes)} | ${fmtMiB(r.baselineRss)} `,
    `| ${fmtMiB(r.uploadPeakRss)} (+${fmtMiB(r.uploadPeakRss - r.baselineRss)}) | ${r.uploadSeconds.toFixed(1)} s, ${mibps(r.uploadSeconds)} `,
    `| ${fmtMiB(r.downloadPeakRss)} (+${fmtMiB(r.downloadPeakRss - r.baselineRss)}) | ${r.downloadSeconds.toFixed(1)} s, ${mibps(r.downloadSeconds)} `,
    `| ${r.md5Matches ? 'yes' : 'NO'} |`,
  ].join('');
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), { 'state-mib': 'string', 'reference-mib': 'string' });
  const stateMiB = Number(flags['state-mib'] ?? 500);
  const referenceMiB = Number(flags['reference-mib'] ?? Math.max(1, Math.round(stateMiB / 5)));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-sealed-state-'));
  const server = await startTerrace({
    dataDir,
    env: { TERRACE_JOBS: 'false', TERRACE_MAX_STATE_BYTES: String((stateMiB + 16) * MiB) },
  });
  try {
    const target = { url: server.url, pid: server.pid, token: ADMIN_TOKEN };
    log(`reference: ${referenceMiB} MiB state`);
    const reference = await measureStateTransfer(target, referenceMiB * MiB, 'reference');
    log(`large: ${stateMiB} MiB state`);
    const large = await measureStateTransfer(target, stateMiB * MiB, 'large');
    const stored = fs.readdirSync(dataDir, { recursive: true, encoding: 'utf8' }).find((f) => f.endsWith(`${large.stateVersionId}.json`));
    const head = stored ? fs.readFileSync(path.join(dataDir, stored)).subarray(0, 7).toString('latin1') : '(not found)';
    process.stdout.write(
      [
        `\nState through the upload URL and back, sealed at rest (stored blob starts ${JSON.stringify(head)}), node ${process.version}`,
        '',
        '| run | state | RSS before | upload peak | upload | download peak | download | md5 matches |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
        row('reference', reference),
        row('large', large),
        '',
      ].join('\n'),
    );
    if (!reference.md5Matches || !large.md5Matches) process.exitCode = 1;
  } finally {
    await server.stop();
    await stopAll();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
