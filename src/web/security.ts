import type { Context, MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../http/auth.js';
import { authorize } from '../http/authorized.js';
import { ApiError, payloadTooLarge, unauthorized } from '../http/errors.js';
import { currentSession, forbidden, newSecret, validCsrf, validPreSessionCsrf, type WebSession } from './sessions.js';

export type WebEnv = {
  Variables: AppEnv['Variables'] & {
    session: WebSession | null;
    /** Extra form-action sources for this page's policy (the consent page posts, then redirects to Terraform). */
    formActions: string[] | undefined;
  };
};

export const SESSION_COOKIE = 'terrace_session';
export const PRE_SESSION_COOKIE = 'terrace_csrf';
/** Forms are small: a pasted token, a description, an approval. */
export const MAX_FORM_BYTES = 16 * 1024;

/** Strict by default: nothing inline, nothing from another origin, no framing. */
export function contentSecurityPolicy(formActions: string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    `form-action 'self'${formActions.map((a) => ` ${a}`).join('')}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Headers every page, asset and error of the web surface carries. */
export const securityHeaders: MiddlewareHandler<WebEnv> = async (c, next) => {
  await next();
  c.header('Content-Security-Policy', contentSecurityPolicy(c.get('formActions')));
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('X-Frame-Options', 'DENY');
  c.header('Referrer-Policy', 'same-origin');
  if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store');
};

/** Resolves the session cookie into c.var.session and c.var.principal. Bearer tokens do not sign in pages. */
export function webSession(deps: Deps): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const session = await currentSession(deps, getCookie(c, SESSION_COOKIE));
    c.set('session', session);
    c.set('principal', session?.principal ?? null);
    return next();
  };
}

export function secureCookies(deps: Deps): boolean {
  return deps.config.publicUrl.startsWith('https:') || deps.config.tlsCert !== undefined;
}

export function setSessionCookie(deps: Deps, c: Context, value: string): void {
  setCookie(c, SESSION_COOKIE, value, {
    path: '/',
    httpOnly: true,
    sameSite: 'Lax',
    secure: secureCookies(deps),
    maxAge: deps.config.sessionTtlSeconds,
  });
}

export function clearSessionCookie(deps: Deps, c: Context): void {
  setCookie(c, SESSION_COOKIE, '', { path: '/', httpOnly: true, sameSite: 'Lax', secure: secureCookies(deps), maxAge: 0 });
}

/** The random cookie the sign-in form's CSRF field is bound to; made when the form is shown. */
export function preSessionCookie(deps: Deps, c: Context): string {
  const existing = getCookie(c, PRE_SESSION_COOKIE);
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
  const value = newSecret();
  setCookie(c, PRE_SESSION_COOKIE, value, { path: '/app', httpOnly: true, sameSite: 'Lax', secure: secureCookies(deps) });
  return value;
}

/**
 * A form post must come from a page of this server: the browser's Origin header (or, without it,
 * Sec-Fetch-Site) says where it was made. Requests from tools send neither and are judged by the
 * CSRF token alone.
 */
function sameOrigin(deps: Deps, c: Context): boolean {
  const origin = c.req.header('origin');
  if (origin !== undefined) return origin === new URL(c.req.url).origin || origin === new URL(deps.config.publicUrl).origin;
  const site = c.req.header('sec-fetch-site');
  return site === undefined || site === 'same-origin' || site === 'none';
}

/** The session that may post this form, or 401; the origin is checked before the body is read. */
export function requireSession(c: Context<WebEnv>): WebSession {
  const session = c.get('session');
  authorize(session !== null, () => unauthorized('you are not signed in, or your session has expired: sign in again at /app/signin'));
  return session!;
}

/** Reads an urlencoded form, at most MAX_FORM_BYTES. */
export async function readForm(c: Context): Promise<URLSearchParams> {
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new ApiError(415, 'unsupported media type', 'send the form as application/x-www-form-urlencoded');
  }
  const declared = Number(c.req.header('content-length') ?? '0');
  if (declared > MAX_FORM_BYTES) throw payloadTooLarge(`a form may be at most ${MAX_FORM_BYTES} bytes`);
  const text = await c.req.text();
  if (Buffer.byteLength(text) > MAX_FORM_BYTES) throw payloadTooLarge(`a form may be at most ${MAX_FORM_BYTES} bytes`);
  return new URLSearchParams(text);
}

const CROSS_SITE = 'this form was posted from another site; reload the page on this server and submit it again';
const STALE_FORM = 'this form has expired or was not made for your session; reload the page and submit it again';

/** A signed-in user's form: session (401), origin (403), then the body and its CSRF token (403). */
export async function sessionForm(deps: Deps, c: Context<WebEnv>): Promise<{ session: WebSession; form: URLSearchParams }> {
  const session = requireSession(c);
  if (!sameOrigin(deps, c)) throw forbidden(CROSS_SITE);
  const form = await readForm(c);
  if (!validCsrf(deps, session, form.get('csrf') ?? undefined)) throw forbidden(STALE_FORM);
  return { session, form };
}

/** The sign-in form, before any session: origin and the double-submitted cookie decide. */
export async function preSessionForm(deps: Deps, c: Context<WebEnv>): Promise<URLSearchParams> {
  const cookie = getCookie(c, PRE_SESSION_COOKIE);
  authorize(cookie !== undefined && sameOrigin(deps, c), () => forbidden(cookie === undefined ? STALE_FORM : CROSS_SITE));
  const form = await readForm(c);
  if (!validPreSessionCsrf(deps, cookie, form.get('csrf') ?? undefined)) throw forbidden(STALE_FORM);
  return form;
}

/** Only paths of this UI may be returned to after sign-in: never another host. */
export function safeNext(raw: string | null | undefined): string {
  if (!raw || raw.length > 2000 || !raw.startsWith('/app') || raw.startsWith('//') || /[\\\s]/.test(raw)) return '/app';
  return raw;
}
