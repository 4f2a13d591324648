import { createHmac } from 'node:crypto';
import { quoteValue } from '../http/errors.js';

/** The longest integrator URL Terrace stores and calls. */
export const MAX_TASK_URL_LENGTH = 2048;

/** Why url cannot be an integrator URL, or null when it can: http(s), no userinfo, bounded length. */
export function taskUrlProblem(url: string): string | null {
  if (url.length > MAX_TASK_URL_LENGTH) return `must be at most ${MAX_TASK_URL_LENGTH} characters`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `must be an absolute http or https URL, got ${quoteValue(url)}`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must use http or https, got ${quoteValue(u.protocol.replace(/:$/, ''))}`;
  if (u.username !== '' || u.password !== '') return 'must not carry a user name or password: use the HMAC key to authenticate Terrace to the integrator';
  if (u.hash !== '') return 'must not have a fragment (#…)';
  return null;
}

/** The lower-case hex HMAC-SHA512 of the exact body bytes; '' when the task has no key. */
export function taskSignature(key: string, body: Buffer): string {
  return key === '' ? '' : createHmac('sha512', Buffer.from(key, 'utf8')).update(body).digest('hex');
}

export interface SendResult {
  /** The integrator answered 200. */
  ok: boolean;
  /** What happened, for logs, errors and retries: "HTTP 500", "timed out after 10000 ms", … */
  outcome: string;
}

/**
 * POSTs a run task request: compact JSON signed over its exact bytes, both signature headers,
 * never following a redirect, within timeoutMs for the whole exchange, and nothing of Terrace's
 * own credentials. Only 200 counts as accepted (the seed's rule).
 */
export async function sendTaskRequest(url: string, payload: unknown, hmacKey: string, opts: { timeoutMs: number; publicUrl: string }): Promise<SendResult> {
  const body = Buffer.from(JSON.stringify(payload), 'utf8');
  const signature = taskSignature(hmacKey, body);
  try {
    const res = await fetch(url, {
      method: 'POST',
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(opts.timeoutMs),
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': `Terrace/1.0 (+${opts.publicUrl}; Terrace)`,
        'X-TFC-Task-Signature': signature,
        'X-Terrace-Task-Signature': signature,
      },
    });
    // The answer's body means nothing to the protocol; read a little so the connection is freed.
    await res.body?.cancel().catch(() => undefined);
    return res.status === 200 ? { ok: true, outcome: 'HTTP 200' } : { ok: false, outcome: `HTTP ${res.status}` };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return { ok: false, outcome: `no answer within ${opts.timeoutMs} ms` };
    return { ok: false, outcome: e.cause?.code ?? e.cause?.message ?? e.message };
  }
}
