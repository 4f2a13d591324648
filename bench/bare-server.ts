// The baseline: a bare node:http server answering every request with one fixed JSON body.
// The body is read from BARE_BODY_FILE (the benchmark saves a real Terrace /versions answer
// there, so both send the same bytes) or is BARE_BODY_BYTES of padded JSON.
//
// Its answers are ended together once the requests read in one go have been handled, as
// Terrace's registry lean path ends them (src/http/write-batch.ts, the same class), so the
// ratio to it measures Terrace's work and not the way answers are written. At /direct each
// answer is ended at once instead: the baseline up to 2026-11-26, still measured for comparison.
//
//   PORT=9000 BARE_BODY_BYTES=900 npx tsx bench/bare-server.ts
import fs from 'node:fs';
import http from 'node:http';
import { WRITE_BATCH_MAX, WriteBatch, type BatchedAnswer } from '../src/http/write-batch.js';

function fixedBody(): Buffer {
  const file = process.env.BARE_BODY_FILE;
  if (file) return fs.readFileSync(file);
  const bytes = Number(process.env.BARE_BODY_BYTES ?? 800);
  const shell = '{"modules":[{"source":"bench/bare/server","versions":[]}],"pad":""}';
  return Buffer.from(shell.replace('"pad":""', `"pad":"${'x'.repeat(Math.max(0, bytes - shell.length))}"`));
}

const body = fixedBody();
const headers = { 'Content-Type': 'application/json', 'Content-Length': String(body.length) };
const batch = new WriteBatch<BatchedAnswer>(
  WRITE_BATCH_MAX,
  () => {},
  (err) => process.stderr.write(`bare server: ${String(err)}\n`),
);
const server = http.createServer((req, res) => {
  res.writeHead(200, headers);
  if (req.url === '/direct') res.end(body);
  else batch.add({ res, body });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`bare server listening on ${typeof addr === 'object' && addr ? addr.port : addr} (${body.length}-byte body)\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => server.close(() => process.exit(0)));
