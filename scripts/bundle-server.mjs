#!/usr/bin/env node
// Bundles the server (src/main.ts) with esbuild into dist/server/ (or --outdir DIR): the second
// step of `npm run build`, after tsc. `npm start` runs dist/server/main.mjs: loading a few bundled
// files instead of resolving, reading and compiling hundreds of modules is most of start-up.
//
// Code splitting keeps what server.ts imports dynamically (the PostgreSQL store, the S3 blob
// store) in chunks loaded only when configured. Packages stay outside the bundle, resolved from
// the node_modules beside it, when they are native (better-sqlite3), loaded only on demand (pg,
// the AWS SDK, markdown-it) or found by path at run time (@cdktn/hcl2json, which the inspection
// worker requires from its resolved file).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('../', import.meta.url));
const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
const outdir = path.resolve(root, values.outdir ?? 'dist/server');

// Chunk names carry content hashes: a previous build's chunks would be left behind.
if (fs.existsSync(outdir)) for (const f of fs.readdirSync(outdir)) if (/\.mjs(\.map)?$/.test(f)) fs.rmSync(path.join(outdir, f));
await esbuild.build({
  absWorkingDir: root,
  entryPoints: { main: 'src/main.ts' },
  outdir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
  external: ['better-sqlite3', 'pg', '@aws-sdk/*', 'markdown-it', '@cdktn/hcl2json'],
  // Stack traces under `node --enable-source-maps` name the .ts files; the map leaves out their
  // text (a smaller map is faster to load at start).
  sourcemap: 'linked',
  sourcesContent: false,
  // Bundled CommonJS packages require() Node's built-in modules.
  banner: { js: "import { createRequire as __terraceRequire } from 'node:module'; const require = __terraceRequire(import.meta.url);" },
  logLevel: 'warning',
});
