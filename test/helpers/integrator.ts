import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jsonOrUndefined } from './server.js';

/** One request the integrator received: exact bytes, headers, and what it made of the signature. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  body: any;
  /** The X-TFC-Task-Signature header verified over the raw body with the integrator's key. */
  signatureValid: boolean;
}

export type Answer = { status: number } | { silence: true } | { delayMs: number; status: number };

/**
 * A run task integrator written from the seed's protocol, on a real socket: it verifies the
 * HMAC-SHA512 signature over the raw body the way integrators do (before parsing), records what
 * it got, and answers as the test tells it (a status, silence, or a slow answer).
 */
export class Integrator {
  readonly received: ReceivedRequest[] = [];
  /** Answers for the next requests, in order; when empty, `fallback`. */
  readonly answers: Answer[] = [];
  fallback: Answer = { status: 200 };
  /** Called with every request after it is answered (an integrator that calls back on its own). */
  onRequest: ((req: ReceivedRequest) => void) | null = null;
  private server!: Server;
  url = '';
  private readonly held: (() => void)[] = [];

  constructor(readonly hmacKey: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const header = String(req.headers['x-tfc-task-signature'] ?? '');
        let signatureValid: boolean;
        if (this.hmacKey === '') signatureValid = header === '';
        else {
          const expected = Buffer.from(createHmac('sha512', this.hmacKey).update(raw).digest('hex'));
          const given = Buffer.from(header);
          signatureValid = expected.length === given.length && timingSafeEqual(expected, given);
        }
        let body: unknown;
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          body = undefined;
        }
        this.received.push({ method: req.method!, path: req.url!, headers: req.headers, raw, body, signatureValid });
        const answer = this.answers.shift() ?? this.fallback;
        if (this.onRequest) res.on('finish', () => this.onRequest?.(this.received.at(-1)!));
        if ('silence' in answer) {
          this.held.push(() => res.destroy());
          return;
        }
        const send = () => {
          res.statusCode = answer.status;
          res.end();
        };
        if ('delayMs' in answer) setTimeout(send, answer.delayMs);
        else send();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** Requests other than the verification pings (access_token "test-token"). */
  deliveries(): ReceivedRequest[] {
    return this.received.filter((r) => r.body?.access_token !== 'test-token');
  }

  async close(): Promise<void> {
    for (const h of this.held.splice(0)) h();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** The integrator's callback: PATCH the callback URL with the access token, as integrators send it. */
export async function callBack(callbackUrl: string, token: string | null, body: unknown, headers: Record<string, string> = {}) {
  const h: Record<string, string> = { 'Content-Type': 'application/vnd.api+json', ...headers };
  if (token !== null) h.Authorization = `Bearer ${token}`;
  const res = await fetch(callbackUrl, { method: 'PATCH', headers: h, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: jsonOrUndefined(text), text };
}

export function resultBody(status: string, extra: { message?: string; url?: string; outcomes?: unknown[] } = {}) {
  const { outcomes, ...attrs } = extra;
  return {
    data: {
      type: 'task-results',
      attributes: { status, ...attrs },
      ...(outcomes ? { relationships: { outcomes: { data: outcomes } } } : {}),
    },
  };
}
