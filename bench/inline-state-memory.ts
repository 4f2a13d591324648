// Server memory while state versions are created inline (go-tfe's Create: the state base64 in the
// JSON:API body). Terrace runs as its own process; its RSS is sampled from /proc/<pid>/status
// every 50 ms while one, then several such requests are sent at once.
//
//   npx tsx bench/inline-state-memory.ts [--state-mib 60] [--concurrent 3] [--root <source tree>]
//
// BENCH_SERVER_NODE_OPTIONS is passed to the server as NODE_OPTIONS (e.g. --max-old-space-size=128:
// a server that holds the bodies dies under it; one that streams them does not).
// --root runs another source tree (for example a checkout from before a change) so the two can
// be compared on the same machine. See docs/performance.md, "Inline state versions".
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, MiB, RssSampler, fmtMiB, idleRss, log, parseFlags, stopAll } from './common.js';
import { startTerrace } from './terrace.js';

const flags = parseFlags(process.argv.slice(2), { 'state-mib': 'string', concurrent: 'string', root: 'string' });
const stateMiB = Number(flags['state-mib'] ?? 60);
const concurrent = Number(flags.concurrent ?? 3);
const root = typeof flags.root === 'string' ? path.resolve(flags.root) : undefined;

async function api(base: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(base + p, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/vnd.api+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** A format-4 state of about sizeMiB: one output holding incompressible text, as a big state has. */
function bigState(sizeMiB: number, serial: number): Buffer {
  const filler = randomBytes(Math.floor((sizeMiB * MiB * 3) / 4)).toString('base64');
  return Buffer.from(
    JSON.stringify({ version: 4, terraform_version: '1.9.8', serial, lineage: 'bench-inline', outputs: { blob: { value: filler, type: 'string' } }, resources: [] }),
  );
}

/** The request body go-tfe sends, as bytes (built once, in this process, not the server's). */
function createBody(state: Buffer): Buffer {
  const md5 = createHash('md5').update(state).digest('hex');
  return Buffer.from(
    JSON.stringify({ data: { type: 'state-versions', attributes: { serial: 1, md5, lineage: 'bench-inline', state: state.toString('base64') } } }),
  );
}

function post(url: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/vnd.api+json', 'Content-Length': body.length },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-inline-'));
  const server = await startTerrace({ dataDir, root, env: { TERRACE_JOBS: 'false', ...(process.env.BENCH_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS } : {}) } });
  try {
    await api(server.url, 'POST', '/api/v2/organizations', { data: { type: 'organizations', attributes: { name: 'bench', email: 'bench@example.com' } } });
    const workspaces: string[] = [];
    for (let i = 0; i < concurrent + 1; i++) {
      const ws = await api(server.url, 'POST', '/api/v2/organizations/bench/workspaces', { data: { type: 'workspaces', attributes: { name: `inline-${i}` } } });
      await api(server.url, 'POST', `/api/v2/workspaces/${ws.data.id}/actions/lock`, {});
      workspaces.push(ws.data.id);
    }
    log(`building a ${stateMiB} MiB state and its request body`);
    const body = createBody(bigState(stateMiB, 1));
    log(`request body: ${fmtMiB(body.length)}`);
    const rows: string[] = [];
    const round = async (label: string, ids: string[]) => {
      const baseline = await idleRss(server.pid);
      const sampler = new RssSampler(server.pid, 50).start();
      const started = performance.now();
      const statuses = await Promise.all(ids.map((id) => post(`${server.url}/api/v2/workspaces/${id}/state-versions`, body)));
      const seconds = (performance.now() - started) / 1000;
      const { peak } = sampler.stop();
      rows.push(`| ${label} | ${statuses.join(', ')} | ${fmtMiB(baseline)} | ${fmtMiB(peak)} | +${fmtMiB(peak - baseline)} | ${seconds.toFixed(1)} s |`);
    };
    await round('1 request', [workspaces[0]!]);
    await round(`${concurrent} at once`, workspaces.slice(1, 1 + concurrent));
    process.stdout.write(
      [
        `\nInline state-version create, ${fmtMiB(body.length)} body (${stateMiB} MiB state)${root ? `, tree ${root}` : ''}`,
        '',
        '| requests | statuses | RSS before | RSS peak | growth | time |',
        '| --- | --- | ---: | ---: | ---: | ---: |',
        ...rows,
        '',
      ].join('\n'),
    );
  } finally {
    await server.stop();
    await stopAll();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
