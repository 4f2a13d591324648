// PUT of an archive to a one-time upload URL, with progress and retries. The URL stays usable
// after an interrupted upload (the server puts the version back to pending), so a transient
// failure is retried on the same URL.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessages } from './client.js';
import { CliError, EXIT } from './errors.js';
import { mib } from './ui.js';

export interface Progress { update(sent: number): void; done(): void }

/**
 * On a terminal, one bar redrawn in place; otherwise a plain line at each quarter, so CI logs
 * stay readable. mode 'none' prints nothing.
 */
export function progress(stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }, label: string, total: number, mode: 'auto' | 'lines' | 'none'): Progress {
  if (mode === 'none') return { update() {}, done() {} };
  if (mode === 'auto' && stream.isTTY) {
    let last = -1;
    const draw = (sent: number) => {
      const pct = total === 0 ? 100 : Math.floor((sent / total) * 100);
      if (pct === last) return;
      last = pct;
      const width = 30;
      const full = Math.round((pct / 100) * width);
      stream.write(`\r\x1b[2K${label} [${'#'.repeat(full)}${'-'.repeat(width - full)}] ${String(pct).padStart(3)}% ${mib(sent)}/${mib(total)}`);
    };
    draw(0);
    return { update: draw, done: () => { draw(total); stream.write('\n'); } };
  }
  let quarter = -1;
  const line = (sent: number) => {
    const q = total === 0 ? 4 : Math.floor((sent / total) * 4);
    if (q <= quarter) return;
    quarter = q;
    stream.write(`${label}: uploaded ${q * 25}% (${sent} of ${total} bytes)\n`);
  };
  line(0);
  return { update: line, done: () => line(total) };
}

interface PutResult { status: number; json: any }

function putOnce(url: URL, file: string, size: number, onSent: (n: number) => void): Promise<PutResult> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(size), Accept: 'application/json' },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: any;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    let sent = 0;
    const body = fs.createReadStream(file, { highWaterMark: 64 * 1024 });
    body.on('data', (c) => {
      sent += c.length;
      onSent(sent);
    });
    body.on('error', (err) => req.destroy(err));
    body.pipe(req);
  });
}

/**
 * Uploads; answers the server's verdict. 413/422 mean the archive was refused (the version is then
 * errored, and the message says why). Network failures, 5xx and "upload interrupted" are retried.
 */
export async function uploadArchive(
  url: string,
  file: string,
  size: number,
  bar: Progress,
  onRetry: (why: string) => void,
  attempts = 4,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const target = new URL(url);
  for (let attempt = 1; ; attempt++) {
    let res: PutResult | undefined;
    let why: string;
    try {
      res = await putOnce(target, file, size, (n) => bar.update(n));
      if (res.status >= 200 && res.status < 300) {
        bar.done();
        return { ok: true };
      }
      if (res.status === 413 || res.status === 422) return { ok: false, error: errorMessages(res.json).join('; ') || `refused with HTTP ${res.status}` };
      // Used or expired: after a retry this usually means the first attempt reached the server
      // after all; the version's status (read next) tells.
      if (res.status === 404) return { ok: false, error: `the upload URL is no longer valid (${errorMessages(res.json).join('; ') || 'HTTP 404'}): publish the version again` };
      why = `HTTP ${res.status}${errorMessages(res.json).length ? `: ${errorMessages(res.json).join('; ')}` : ''}`;
      if (res.status < 500 && res.status !== 400 && res.status !== 429) {
        throw new CliError(`the upload was refused: ${why}`, EXIT.failed);
      }
    } catch (err) {
      if (err instanceof CliError) throw err;
      why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    }
    if (attempt >= attempts) throw new CliError(`the upload failed ${attempts} times (last: ${why})`, EXIT.unavailable, 'check the network and the server, then publish again');
    onRetry(why);
    await sleep(Math.min(250 * 2 ** attempt, 4000));
  }
}
