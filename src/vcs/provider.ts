import type { Deps } from '../deps.js';
import { truncate } from '../http/errors.js';
import { isGitHub, PROVIDER_DISPLAY_NAMES, type VcsConnection } from './connection.js';

/** The most of a provider's answer Terrace reads: its REST answers here are small objects. */
export const MAX_PROVIDER_RESPONSE_BYTES = 1024 * 1024;

/**
 * A provider call that did not succeed. status is the provider's HTTP status, or null when no
 * answer came (refused, timed out, too large). The message is short and never holds the token.
 */
export class ProviderError extends Error {
  constructor(
    readonly status: number | null,
    message: string,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** GitHub owner/repo names and GitLab group/project paths: no dot segments, no URL syntax. */
const SEGMENT = /^[A-Za-z0-9_.-]+$/;

function checkIdentifier(c: VcsConnection, identifier: string): string[] {
  const parts = identifier.split('/');
  const ok = parts.every((p) => SEGMENT.test(p) && p !== '.' && p !== '..');
  const shapeOk = isGitHub(c.serviceProvider) ? parts.length === 2 : parts.length >= 2;
  if (!ok || !shapeOk) {
    throw new ProviderError(null, `${JSON.stringify(truncate(identifier, 100))} is not a repository identifier (${isGitHub(c.serviceProvider) ? 'owner/repository' : 'group/project'})`);
  }
  return parts;
}

function checkHookId(hookId: string): void {
  if (!/^\d{1,20}$/.test(hookId)) throw new ProviderError(null, `${JSON.stringify(truncate(hookId, 40))} is not a webhook id`);
}

/** The API URL for path, refusing anything that would leave the api-url's origin (the token goes there only). */
function endpoint(c: VcsConnection, path: string): URL {
  const base = new URL(c.apiUrl);
  const url = new URL(c.apiUrl.replace(/\/+$/, '') + path);
  if (url.origin !== base.origin) throw new ProviderError(null, 'the request would leave the configured api-url');
  return url;
}

function authHeaders(c: VcsConnection): Record<string, string> {
  return isGitHub(c.serviceProvider)
    ? { Authorization: `Bearer ${c.token}`, Accept: 'application/vnd.github+json', 'X-GitHub-Api-Version': '2022-11-28' }
    : { 'PRIVATE-TOKEN': c.token, Accept: 'application/json' };
}

/** Reads at most MAX_PROVIDER_RESPONSE_BYTES of the body; a longer one is refused without reading on. */
async function readCapped(res: Response): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_PROVIDER_RESPONSE_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw new ProviderError(null, `the answer is larger than ${MAX_PROVIDER_RESPONSE_BYTES} bytes`);
  }
  if (!res.body) return '';
  const chunks: Buffer[] = [];
  let seen = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    seen += chunk.byteLength;
    if (seen > MAX_PROVIDER_RESPONSE_BYTES) {
      await res.body.cancel().catch(() => undefined);
      throw new ProviderError(null, `the answer is larger than ${MAX_PROVIDER_RESPONSE_BYTES} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The provider's own short explanation (GitHub's and GitLab's "message"/"error"), without the token. */
function providerMessage(text: string, token: string): string {
  let m = '';
  try {
    const v = JSON.parse(text) as { message?: unknown; error?: unknown };
    const raw = v.message ?? v.error;
    m = typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw);
  } catch {
    m = '';
  }
  if (token !== '') m = m.split(token).join('[token]');
  return truncate(m.replace(/\s+/g, ' ').trim(), 200);
}

interface CallResult {
  status: number;
  json: unknown;
}

/**
 * One REST call within the configured time limit: redirects are answered, not followed (the
 * token must not travel to another host), the answer is size-capped, and failures become a
 * ProviderError whose message names the provider and what it said.
 */
async function call(deps: Deps, c: VcsConnection, method: string, path: string, body?: unknown): Promise<CallResult> {
  const url = endpoint(c, path);
  const name = `${PROVIDER_DISPLAY_NAMES[c.serviceProvider]} API`;
  const timeoutMs = deps.config.vcsRequestTimeoutMs;
  const headers: Record<string, string> = { ...authHeaders(c), 'User-Agent': 'Terrace' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await readCapped(res);
  } catch (err) {
    if (err instanceof ProviderError) throw new ProviderError(null, `${name}: ${err.message}`);
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new ProviderError(null, `${name} did not answer within ${timeoutMs} ms`);
    throw new ProviderError(null, `${name} could not be reached (${e.cause?.code ?? e.name})`);
  }
  deps.logger.debug({ provider: c.serviceProvider, method, path: url.pathname, status: res.status }, 'VCS provider call');
  if (res.status >= 300 && res.status < 400) {
    throw new ProviderError(res.status, `${name} answered with a redirect (HTTP ${res.status}), which Terrace does not follow: check the api-url`);
  }
  if (res.status >= 400) {
    const said = providerMessage(text, c.token);
    throw new ProviderError(res.status, `${name} returned ${res.status}${said ? `: ${said}` : ''}`);
  }
  let json: unknown = null;
  if (text.trim() !== '') {
    try {
      json = JSON.parse(text);
    } catch {
      throw new ProviderError(res.status, `${name} answered ${res.status} with a body that is not JSON`);
    }
  }
  return { status: res.status, json };
}

/** The account that owns the token: GitHub's login, GitLab's username. */
export async function providerUser(deps: Deps, c: VcsConnection): Promise<string> {
  const { json } = await call(deps, c, 'GET', '/user');
  const v = (json ?? {}) as { login?: unknown; username?: unknown };
  const user = isGitHub(c.serviceProvider) ? v.login : v.username;
  if (typeof user !== 'string' || user === '') {
    throw new ProviderError(200, `${PROVIDER_DISPLAY_NAMES[c.serviceProvider]} API answered GET /user without a ${isGitHub(c.serviceProvider) ? 'login' : 'username'}`);
  }
  return user;
}

function hookIdOf(c: VcsConnection, json: unknown): string {
  const id = (json as { id?: unknown } | null)?.id;
  if ((typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) || (typeof id === 'string' && /^\d{1,20}$/.test(id))) return String(id);
  throw new ProviderError(null, `${PROVIDER_DISPLAY_NAMES[c.serviceProvider]} API created a webhook but answered without its id`);
}

/**
 * Registers a webhook on the repository (GitHub: owner/repo, push and create events, JSON, the
 * secret signs deliveries; GitLab: group/project, tag push events, the secret as its token).
 */
export async function registerWebhook(deps: Deps, c: VcsConnection, identifier: string, url: string, secret: string): Promise<{ hookId: string }> {
  const parts = checkIdentifier(c, identifier);
  if (isGitHub(c.serviceProvider)) {
    const { json } = await call(deps, c, 'POST', `/repos/${parts.map(encodeURIComponent).join('/')}/hooks`, {
      name: 'web',
      active: true,
      events: ['push', 'create'],
      config: { url, content_type: 'json', secret, insecure_ssl: '0' },
    });
    return { hookId: hookIdOf(c, json) };
  }
  const { json } = await call(deps, c, 'POST', `/projects/${encodeURIComponent(parts.join('/'))}/hooks`, {
    url,
    token: secret,
    tag_push_events: true,
    push_events: false,
    enable_ssl_verification: true,
  });
  return { hookId: hookIdOf(c, json) };
}

/** Removes a webhook. One that is already gone (404) counts as removed. */
export async function deleteWebhook(deps: Deps, c: VcsConnection, identifier: string, hookId: string): Promise<void> {
  const parts = checkIdentifier(c, identifier);
  checkHookId(hookId);
  const path = isGitHub(c.serviceProvider)
    ? `/repos/${parts.map(encodeURIComponent).join('/')}/hooks/${hookId}`
    : `/projects/${encodeURIComponent(parts.join('/'))}/hooks/${hookId}`;
  try {
    await call(deps, c, 'DELETE', path);
  } catch (err) {
    if (err instanceof ProviderError && err.status === 404) return;
    throw err;
  }
}
