// The baseline: a bare node:http server answering every request with one fixed JSON body.
// The body is read from BARE_BODY_FILE (the benchmark saves a real Terrace /versions answer
// there, so both send the same bytes) or is BARE_BODY_BYTES of padded JSON.
//
//   PORT=9000 BARE_BODY_BYTES=900 npx tsx bench/bare-server.ts
import fs from 'node:fs';
import http from 'node:http';

function fixedBody(): Buffer {
  const file = process.env.BARE_BODY_FILE;
  if (file) return fs.readFileSync(file);
  const bytes = Number(process.env.BARE_BODY_BYTES ?? 800);
  const shell = '{"modules":[{"source":"bench/bare/server","versions":[]}],"pad":""}';
  return Buffer.from(shell.replace('"pad":""', `"pad":"${'x'.repeat(Math.max(0, bytes - shell.length))}"`));
}

const body = fixedBody();
const headers = { 'Content-Type': 'application/json', 'Content-Length': String(body.length) };
const server = http.createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`bare server listening on ${typeof addr === 'object' && addr ? addr.port : addr} (${body.length}-byte body)\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => server.close(() => process.exit(0)));
