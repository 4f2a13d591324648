import type { TestServer } from './server.js';

export interface WebResponse {
  status: number;
  headers: Headers;
  text: string;
  location: string | null;
}

/**
 * A browser as far as HTTP goes: keeps cookies, sends the Origin header a browser sends with a
 * form post, and reads CSRF fields out of the pages it got. Redirects are not followed, so tests
 * see each one.
 */
export class WebClient {
  readonly cookies = new Map<string, string>();
  constructor(readonly t: TestServer) {}

  get origin(): string {
    return new URL(this.t.url).origin;
  }

  private cookieHeader(): Record<string, string> {
    return this.cookies.size ? { Cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {};
  }

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<WebResponse> {
    const res = await fetch(this.t.url + path, { headers: { ...this.cookieHeader(), ...headers }, redirect: 'manual' });
    this.remember(res);
    return { status: res.status, headers: res.headers, text: await res.text(), location: res.headers.get('location') };
  }

  /** Posts a form as a browser on this server's pages would; headers override (say a foreign Origin). */
  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<WebResponse> {
    const res = await fetch(this.t.url + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: this.origin, ...this.cookieHeader(), ...headers },
      body: new URLSearchParams(fields).toString(),
      redirect: 'manual',
    });
    this.remember(res);
    return { status: res.status, headers: res.headers, text: await res.text(), location: res.headers.get('location') };
  }

  /** Signs in with an API token through the sign-in form; throws unless it worked. */
  async signIn(token: string): Promise<void> {
    const form = await this.get('/app/signin');
    const res = await this.post('/app/signin', { csrf: csrfOf(form.text), token, next: '/app' });
    if (res.status !== 303) throw new Error(`sign-in: ${res.status} ${res.text.slice(0, 300)}`);
  }

  /** The CSRF token of the forms on a signed-in page. */
  async csrf(path = '/app/settings/tokens'): Promise<string> {
    return csrfOf((await this.get(path)).text);
  }
}

export function csrfOf(html: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(html);
  if (!m) throw new Error(`no CSRF field in ${html.slice(0, 300)}`);
  return m[1]!;
}

/** The visible text of a page (tags dropped, entities for the few characters the renderer escapes decoded). */
export function textOf(html: string): string {
  return html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/\s+/g, ' ');
}
