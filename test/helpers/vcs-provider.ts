import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request the fake provider received, as it arrived. */
export interface ProviderCall {
  method: string;
  /** The path and query exactly as sent (percent-encoding kept). */
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  body: any;
}

/** What to answer instead of the normal behaviour: a status (with an optional body), a redirect, silence, or a big body. */
export type ProviderAnswer =
  | { status: number; body?: unknown }
  | { redirect: string; status?: number }
  | { hang: true }
  | { status: number; rawBody: string | Buffer; contentLength?: boolean };

export interface FakeHook {
  id: number;
  repo: string;
  url: string;
  secret: string;
  body: any;
}

interface TokenInfo {
  user: string;
  /** May create and delete hooks (GitHub: admin on the repository; GitLab: maintainer). */
  admin: boolean;
}

export type FakeProviderKind = 'github' | 'github_enterprise' | 'gitlab';

/**
 * A loopback stand-in for GitHub (api.github.com, or GitHub Enterprise under /api/v3) and GitLab
 * (/api/v4) speaking their real REST shapes for the calls Terrace makes: GET /user, creating and
 * deleting repository webhooks. It checks credentials the way each does (GitHub: Authorization
 * Bearer or token; GitLab: PRIVATE-TOKEN), records every call, and can be told to answer a
 * status, redirect, hang, or send a large body instead.
 */
export class FakeVcsProvider {
  readonly calls: ProviderCall[] = [];
  /** Answers for the next requests, in order; when empty the provider behaves normally. */
  readonly answers: ProviderAnswer[] = [];
  readonly hooks: FakeHook[] = [];
  readonly repositories = new Set<string>();
  private readonly tokens = new Map<string, TokenInfo>();
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  private nextHookId = 1000;
  /** The web address (http-url), e.g. http://127.0.0.1:1234 */
  httpUrl = '';
  /** The REST root Terrace calls (api-url). */
  apiUrl = '';

  constructor(readonly kind: FakeProviderKind) {}

  get prefix(): string {
    return this.kind === 'github' ? '' : this.kind === 'github_enterprise' ? '/api/v3' : '/api/v4';
  }

  addToken(token: string, user: string, opts: { admin?: boolean } = {}): this {
    this.tokens.set(token, { user, admin: opts.admin ?? true });
    return this;
  }

  revokeToken(token: string): void {
    this.tokens.delete(token);
  }

  addRepository(identifier: string): this {
    this.repositories.add(identifier);
    return this;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        let body: unknown;
        try {
          body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
        } catch {
          body = undefined;
        }
        const call: ProviderCall = { method: req.method!, path: req.url!, headers: req.headers, raw, body };
        this.calls.push(call);
        const answer = this.answers.shift();
        if (answer) return this.answerWith(res, answer);
        this.handle(call, res);
      });
    });
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.httpUrl = `http://127.0.0.1:${port}`;
    this.apiUrl = this.httpUrl + this.prefix;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answerWith(res: ServerResponse, a: ProviderAnswer): void {
    if ('hang' in a) return; // never answered; close() ends the socket
    if ('redirect' in a) {
      res.writeHead(a.status ?? 302, { Location: a.redirect }).end();
      return;
    }
    if ('rawBody' in a) {
      const buf = Buffer.from(a.rawBody);
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (a.contentLength !== false) headers['Content-Length'] = String(buf.length);
      res.writeHead(a.status, headers);
      res.end(buf);
      return;
    }
    this.json(res, a.status, a.body ?? this.defaultBody(a.status));
  }

  private defaultBody(status: number): unknown {
    if (this.kind === 'gitlab') return { message: `${status} ${status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : status === 404 ? 'Not Found' : 'Internal Server Error'}` };
    return { message: status === 401 ? 'Bad credentials' : status === 403 ? 'Must have admin rights to Repository.' : status === 404 ? 'Not Found' : 'Server Error', documentation_url: 'https://docs.github.com/rest' };
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    if (status === 204) {
      res.writeHead(204).end();
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)) });
    res.end(text);
  }

  private who(call: ProviderCall): TokenInfo | undefined {
    if (this.kind === 'gitlab') {
      const t = call.headers['private-token'];
      return typeof t === 'string' ? this.tokens.get(t) : undefined;
    }
    const m = /^(?:Bearer|token) (.+)$/.exec(String(call.headers.authorization ?? ''));
    return m ? this.tokens.get(m[1]!) : undefined;
  }

  private handle(call: ProviderCall, res: ServerResponse): void {
    const path = call.path.split('?')[0]!;
    if (!path.startsWith(this.prefix + '/')) return this.json(res, 404, this.defaultBody(404));
    const segs = path.slice(this.prefix.length + 1).split('/').map(decodeURIComponent);
    const who = this.who(call);
    if (!who) return this.json(res, 401, this.defaultBody(401));
    if (call.method === 'GET' && segs.length === 1 && segs[0] === 'user') {
      return this.kind === 'gitlab'
        ? this.json(res, 200, { id: 42, username: who.user, name: who.user, state: 'active', web_url: `${this.httpUrl}/${who.user}` })
        : this.json(res, 200, { login: who.user, id: 42, type: 'User', site_admin: false });
    }
    if (this.kind === 'gitlab') return this.gitlabHooks(call, segs, who, res);
    return this.githubHooks(call, segs, who, res);
  }

  private githubHooks(call: ProviderCall, segs: string[], who: TokenInfo, res: ServerResponse): void {
    // repos/{owner}/{repo}/hooks[/{id}]
    if (segs[0] !== 'repos' || segs[3] !== 'hooks' || segs.length < 4 || segs.length > 5) return this.json(res, 404, this.defaultBody(404));
    const repo = `${segs[1]}/${segs[2]}`;
    // GitHub answers 404 for repositories the token may not administer.
    if (!this.repositories.has(repo) || !who.admin) return this.json(res, 404, this.defaultBody(404));
    if (call.method === 'POST' && segs.length === 4) {
      const b = call.body;
      if (!b || typeof b.config?.url !== 'string') {
        return this.json(res, 422, { message: 'Validation Failed', errors: [{ resource: 'Hook', code: 'custom', message: 'Config must contain a URL' }] });
      }
      const id = this.nextHookId++;
      this.hooks.push({ id, repo, url: b.config.url, secret: b.config.secret ?? '', body: b });
      const now = new Date().toISOString();
      return this.json(res, 201, {
        type: 'Repository',
        id,
        name: 'web',
        active: b.active ?? true,
        events: b.events ?? ['push'],
        config: { content_type: b.config.content_type ?? 'form', insecure_ssl: b.config.insecure_ssl ?? '0', url: b.config.url, secret: '********' },
        updated_at: now,
        created_at: now,
        url: `${this.apiUrl}/repos/${repo}/hooks/${id}`,
        test_url: `${this.apiUrl}/repos/${repo}/hooks/${id}/test`,
        ping_url: `${this.apiUrl}/repos/${repo}/hooks/${id}/pings`,
        deliveries_url: `${this.apiUrl}/repos/${repo}/hooks/${id}/deliveries`,
        last_response: { code: null, status: 'unused', message: null },
      });
    }
    if (call.method === 'DELETE' && segs.length === 5) {
      const i = this.hooks.findIndex((h) => h.repo === repo && String(h.id) === segs[4]);
      if (i === -1) return this.json(res, 404, this.defaultBody(404));
      this.hooks.splice(i, 1);
      return this.json(res, 204, null);
    }
    return this.json(res, 404, this.defaultBody(404));
  }

  private gitlabHooks(call: ProviderCall, segs: string[], who: TokenInfo, res: ServerResponse): void {
    // projects/{id or url-encoded path}/hooks[/{hook_id}]
    if (segs[0] !== 'projects' || segs[2] !== 'hooks' || segs.length < 3 || segs.length > 4) return this.json(res, 404, { message: '404 Not Found' });
    const repo = segs[1]!;
    if (!this.repositories.has(repo)) return this.json(res, 404, { message: '404 Project Not Found' });
    if (!who.admin) return this.json(res, 403, { message: '403 Forbidden' });
    if (call.method === 'POST' && segs.length === 3) {
      const b = call.body;
      if (!b || typeof b.url !== 'string') return this.json(res, 400, { error: 'url is missing' });
      const id = this.nextHookId++;
      this.hooks.push({ id, repo, url: b.url, secret: b.token ?? '', body: b });
      return this.json(res, 201, {
        id,
        url: b.url,
        project_id: 7,
        push_events: b.push_events ?? true,
        tag_push_events: b.tag_push_events ?? false,
        enable_ssl_verification: b.enable_ssl_verification ?? true,
        created_at: new Date().toISOString(),
      });
    }
    if (call.method === 'DELETE' && segs.length === 4) {
      const i = this.hooks.findIndex((h) => h.repo === repo && String(h.id) === segs[3]);
      if (i === -1) return this.json(res, 404, { message: '404 Not found' });
      this.hooks.splice(i, 1);
      return this.json(res, 204, null);
    }
    return this.json(res, 404, { message: '404 Not Found' });
  }
}
