#!/usr/bin/env node
// The `terrace` command. In a clone the TypeScript sources are bundled with esbuild (installed
// with tsx by `npm ci`) into node_modules/.cache, rebuilt whenever a source file is newer, so
// the command is never older than the code and starts fast. Where the sources or esbuild are
// absent (an install without dev dependencies) it runs the compiled dist/ from `npm run build`.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const source = new URL('src/cli/main.ts', root);
const compiled = new URL('dist/src/cli/main.js', root);

/** The cached bundle, rebuilt when missing or older than any file it was built from. */
async function bundled() {
  const dir = new URL('node_modules/.cache/terrace-cli/', root);
  const bundle = new URL('main.mjs', dir);
  const inputsFile = new URL('inputs.json', dir);
  try {
    const built = fs.statSync(bundle).mtimeMs;
    const inputs = JSON.parse(fs.readFileSync(inputsFile, 'utf8'));
    if (inputs.length > 0 && inputs.every((f) => fs.statSync(new URL(f, root)).mtimeMs <= built)) return bundle;
  } catch {
    // no bundle yet, or a source file was removed: build it
  }
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    return null;
  }
  fs.mkdirSync(dir, { recursive: true });
  const tmp = new URL(`main.${process.pid}.${Date.now()}.mjs`, dir);
  const result = await esbuild.build({
    entryPoints: [fileURLToPath(source)],
    outfile: fileURLToPath(tmp),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    metafile: true,
    absWorkingDir: fileURLToPath(root),
    logLevel: 'silent',
  });
  // Input paths are relative to the package root.
  fs.writeFileSync(inputsFile, JSON.stringify(Object.keys(result.metafile.inputs)));
  fs.renameSync(tmp, bundle); // atomic: concurrent runs each see a whole bundle
  return bundle;
}

let entry = null;
if (fs.existsSync(source)) {
  try {
    entry = await bundled();
  } catch {
    entry = null; // e.g. node_modules is read-only: fall back to the compiled command
  }
}
if (!entry && fs.existsSync(compiled)) entry = compiled;
if (!entry) {
  process.stderr.write('error: the terrace command is not built\nhint: run `npm ci` (or `npm run build`) in the Terrace directory\n');
  process.exit(2);
}
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
