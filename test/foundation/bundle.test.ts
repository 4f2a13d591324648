import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VPC_MODULE } from '../fixtures/modules.js';
import { spawnServer, type ServerProcess } from '../helpers/instances.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { startS3Fake, type S3Fake } from '../helpers/s3.js';
import { ADMIN_TOKEN, callApi, tempDir, type TestServer } from '../helpers/server.js';
import { testDatabaseFor, testStore } from '../helpers/store.js';
import { WebClient } from '../helpers/web.js';

/**
 * `npm start` runs the esbuild bundle (dist/server/main.mjs), not the TypeScript sources the other
 * tests load: this builds it with the same script into a temp dir and runs it as its own process
 * on this project's store, through everything it finds at run time rather than by import (the
 * inspection worker's parser, markdown-it, the migrations, the lazily loaded store and blob drivers).
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

let dir: string;
let entry: string;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  dir = tempDir('terrace-bundle-');
  // The bundle finds its external packages (better-sqlite3, pg, …) in node_modules next to it,
  // as dist/server does in a checkout or the container image.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  await run(process.execPath, ['scripts/bundle-server.mjs', '--outdir', path.join(dir, 'server')], { cwd: ROOT, timeout: 60_000 });
  entry = path.join(dir, 'server', 'main.mjs');
}, 90_000);

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The bundled server on a fresh data dir (and, under the postgres project, its own database). */
async function startBundle(env: Record<string, string> = {}): Promise<{ server: ServerProcess; t: TestServer; dataDir: string }> {
  const dataDir = tempDir();
  const db = await testDatabaseFor(dataDir);
  cleanups.push(async () => {
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const server = await spawnServer(dataDir, env, ['--enable-source-maps', entry]);
  cleanups.push(() => server.kill());
  // The registry helpers need only the address and the API of a test server.
  const t = { url: server.url, dataDir, adminToken: ADMIN_TOKEN, api: (method, p, o) => callApi(server.url, method, p, o) } as TestServer;
  return { server, t, dataDir };
}

/** The files a bundle file imports statically (loaded with it), by specifier. */
function staticImports(file: string): string[] {
  const code = fs.readFileSync(file, 'utf8');
  return [...code.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s*"([^"]+)";|^import\s*"([^"]+)";/gm)].map((m) => (m[1] ?? m[2])!);
}

describe('the server bundle (npm start)', () => {
  it('loads the PostgreSQL driver and the AWS SDK only from chunks it imports on demand', () => {
    const loaded = new Set<string>();
    const files = ['main.mjs'];
    for (const f of files) {
      for (const spec of staticImports(path.join(dir, 'server', f))) {
        if (spec.startsWith('./')) {
          if (!files.includes(spec.slice(2))) files.push(spec.slice(2));
        } else loaded.add(spec);
      }
    }
    expect(files.length).toBeGreaterThan(1);
    expect(loaded).toContain('better-sqlite3');
    expect([...loaded].filter((s) => s === 'pg' || s.startsWith('@aws-sdk/') || s === 'markdown-it')).toEqual([]);
    const chunks = fs.readdirSync(path.join(dir, 'server')).filter((f) => f.endsWith('.mjs') && !files.includes(f));
    const lazy = chunks.flatMap((f) => staticImports(path.join(dir, 'server', f)));
    expect(lazy).toContain('pg');
    expect(lazy).toContain('@aws-sdk/client-s3');
  });

  it('starts, publishes an inspected module, renders its README page and serves the UI assets', async () => {
    const { server, t, dataDir } = await startBundle();
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    // The store this project tests: the data dir's SQLite file, or PostgreSQL through the pg chunk.
    expect(fs.existsSync(path.join(dataDir, 'terrace.db'))).toBe(testStore === 'sqlite');

    await createOrganization(t, 'acme');
    await publish(t, 'acme', 'vpc', 'aws', '1.0.0', VPC_MODULE);

    const versions = await t.api('GET', '/v1/modules/acme/vpc/aws/versions');
    expect(versions.status).toBe(200);
    expect(versions.json.modules[0].versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
    // Inputs come from the inspection worker, which requires @cdktn/hcl2json by its resolved path.
    const version = await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0');
    expect(version.status).toBe(200);
    expect(version.json.root.inputs).toContainEqual(expect.objectContaining({ name: 'cidr', type: 'string', description: 'The VPC CIDR block.', required: false }));
    expect(version.json.submodules.map((s: { path: string }) => s.path).sort()).toEqual(['modules/flow-logs', 'modules/subnets']);

    const web = new WebClient(t);
    await web.signIn(ADMIN_TOKEN);
    const page = await web.get('/app/modules/acme/vpc/aws');
    expect(page.status).toBe(200);
    // The README, rendered by markdown-it (loaded on first use).
    expect(page.text).toContain('<p>Creates a <strong>VPC</strong> with public and private subnets across availability zones.</p>');
    const assets = [...page.text.matchAll(/<(?:link rel="stylesheet" href|script src)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(['/app/assets/terrace.css', '/app/assets/terrace.js']);
    for (const [asset, type] of [
      ['/app/assets/terrace.css', 'text/css; charset=utf-8'],
      ['/app/assets/terrace.js', 'text/javascript; charset=utf-8'],
    ] as const) {
      const res = await web.get(asset);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(res.text.length).toBeGreaterThan(500);
    }

    await server.stop();
    expect(server.proc.exitCode).toBe(0);
    expect(server.out()).toContain('"msg":"shutdown complete"');
  });

  it('stores archives in S3 through the AWS SDK chunk when configured', async () => {
    const s3: S3Fake = await startS3Fake();
    cleanups.push(() => s3.close());
    const { server, t } = await startBundle(s3.env);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    await createOrganization(t, 'acme');
    await publish(t, 'acme', 'net', 'aws', '0.1.0');
    const stored = fs.readdirSync(path.join(s3.dir, 'modules'), { recursive: true }).map(String);
    expect(stored.filter((f) => f.endsWith('._S3rver_object'))).toHaveLength(1);
    const download = await t.api('GET', '/v1/modules/acme/net/aws/0.1.0/download');
    expect(download.status).toBe(204);
    const archive = await fetch(new URL(download.headers.get('x-terraform-get')!, server.url));
    expect(archive.status).toBe(200);
    expect((await archive.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });
});
