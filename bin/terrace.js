#!/usr/bin/env node
// The `terrace` command. In a clone it runs the TypeScript sources through tsx (so it is never
// older than the code); without the sources or tsx (an install without dev dependencies) it
// runs the compiled dist/ from `npm run build`.
import fs from 'node:fs';

const root = new URL('../', import.meta.url);
const source = new URL('src/cli/main.ts', root);
const compiled = new URL('dist/src/cli/main.js', root);

let entry = compiled;
if (fs.existsSync(source)) {
  try {
    const { register } = await import('tsx/esm/api');
    register();
    entry = source;
  } catch {
    // tsx is a dev dependency: fall back to the compiled command
  }
}
if (entry === compiled && !fs.existsSync(compiled)) {
  process.stderr.write('error: the terrace command is not built\nhint: run `npm ci` (for tsx) or `npm run build` in the Terrace directory\n');
  process.exit(2);
}
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
