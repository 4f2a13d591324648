import { createHmac, randomUUID } from 'node:crypto';
import type { TestServer } from './server.js';

/** Polls fn until it returns a value (not undefined) or gives up after timeoutMs; a wait, not a timed assertion. */
export async function eventually<T>(fn: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The body go-tfe's CreateWithVCSConnection sends (vcs-repo as plain nested JSON). */
export function vcsModuleBody(vcsRepo: Record<string, unknown>, attributes: Record<string, unknown> = {}) {
  return { data: { type: 'registry-modules', attributes: { 'vcs-repo': vcsRepo, ...attributes } } };
}

export async function createVcsModule(t: TestServer, org: string, vcsRepo: Record<string, unknown>, attributes: Record<string, unknown> = {}, token = t.adminToken) {
  const r = await t.api('POST', `/api/v2/organizations/${org}/registry-modules/vcs`, { token, body: vcsModuleBody(vcsRepo, attributes) });
  if (r.status !== 201) throw new Error(`create VCS module: ${r.status} ${r.text}`);
  return r.json.data;
}

export async function readModule(t: TestServer, org: string, name: string, provider: string, token = t.adminToken) {
  const r = await t.api('GET', `/api/v2/organizations/${org}/registry-modules/private/${org}/${name}/${provider}`, { token });
  if (r.status !== 200) throw new Error(`read module: ${r.status} ${r.text}`);
  return r.json.data;
}

/** Waits until the module's version-statuses list version in a final state; returns that element. */
export async function versionSettled(t: TestServer, org: string, name: string, provider: string, version: string) {
  return eventually(async () => {
    const m = await readModule(t, org, name, provider);
    const v = (m.attributes['version-statuses'] as { version: string; status: string; error: string }[]).find((x) => x.version === version);
    return v && ['ok', 'reg_ingress_failed', 'clone_failed', 'errored'].includes(v.status) ? v : undefined;
  }, `${org}/${name}/${provider} ${version}`);
}

export async function eventMessages(t: TestServer, org: string, token = t.adminToken): Promise<{ level: string; message: string; 'suggested-action': string | null }[]> {
  const r = await t.api('GET', `/api/v2/organizations/${org}/vcs-events?page%5Bsize%5D=100`, { token });
  if (r.status !== 200) throw new Error(`vcs events: ${r.status} ${r.text}`);
  return r.json.data.map((e: any) => e.attributes);
}

export function webhookPath(webhookUrl: string): string {
  return new URL(webhookUrl).pathname;
}

/** Posts a GitHub delivery signed as GitHub signs it (X-Hub-Signature-256 over the raw body). */
export async function deliverGitHub(
  t: TestServer,
  webhookUrl: string,
  event: string,
  payload: unknown,
  secret: string,
  opts: { delivery?: string; form?: boolean; signature?: string } = {},
) {
  const json = JSON.stringify(payload);
  const raw = opts.form ? `payload=${encodeURIComponent(json)}` : json;
  const signature = opts.signature ?? `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
  const res = await fetch(t.url + webhookPath(webhookUrl), {
    method: 'POST',
    headers: {
      'Content-Type': opts.form ? 'application/x-www-form-urlencoded' : 'application/json',
      'User-Agent': 'GitHub-Hookshot/044aadd',
      'X-GitHub-Event': event,
      'X-GitHub-Delivery': opts.delivery ?? randomUUID(),
      'X-GitHub-Hook-ID': '1000',
      'X-Hub-Signature-256': signature,
    },
    body: raw,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** Posts a GitLab delivery with the secret verbatim in X-Gitlab-Token. */
export async function deliverGitLab(t: TestServer, webhookUrl: string, event: string, payload: unknown, token: string, opts: { uuid?: string } = {}) {
  const res = await fetch(t.url + webhookPath(webhookUrl), {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': 'GitLab/17.0.0',
      'X-Gitlab-Event': event,
      'X-Gitlab-Token': token,
      'X-Gitlab-Instance': 'https://gitlab.example.com',
      'X-Gitlab-Event-UUID': opts.uuid ?? randomUUID(),
      'Idempotency-Key': opts.uuid ?? randomUUID(),
    },
    body: JSON.stringify(payload),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const ZERO = '0000000000000000000000000000000000000000';

/** A GitHub push payload for a tag (as octokit's examples: created, integer timestamps in repository). */
export function githubTagPush(identifier: string, tag: string, opts: { after: string; commit?: string; deleted?: boolean }) {
  return {
    ref: `refs/tags/${tag}`,
    before: opts.deleted ? opts.after : ZERO,
    after: opts.deleted ? ZERO : opts.after,
    created: !opts.deleted,
    deleted: opts.deleted ?? false,
    forced: false,
    base_ref: null,
    compare: `https://github.com/${identifier}/compare/${tag}`,
    commits: [],
    head_commit: opts.deleted ? null : { id: opts.commit ?? opts.after, tree_id: ZERO, distinct: true, message: 'release', timestamp: '2026-01-02T03:04:05Z' },
    repository: { id: 1296269, name: identifier.split('/')[1], full_name: identifier, private: true, created_at: 1700000000, pushed_at: 1700000100, default_branch: 'main' },
    pusher: { name: 'octocat', email: 'octocat@example.com' },
    sender: { login: 'octocat', id: 1 },
  };
}

export function githubBranchPush(identifier: string, after: string) {
  return { ...githubTagPush(identifier, 'x', { after }), ref: 'refs/heads/main' };
}

export function gitlabTagPush(identifier: string, tag: string, opts: { checkoutSha: string | null; after?: string }) {
  return {
    object_kind: 'tag_push',
    event_name: 'tag_push',
    before: opts.checkoutSha ? ZERO : (opts.after ?? ZERO),
    after: opts.checkoutSha ? (opts.after ?? opts.checkoutSha) : ZERO,
    ref: `refs/tags/${tag}`,
    checkout_sha: opts.checkoutSha,
    user_username: 'tanuki',
    project_id: 7,
    project: { id: 7, name: identifier.split('/')[1], path_with_namespace: identifier, default_branch: 'main', git_http_url: `https://gitlab.example.com/${identifier}.git` },
    commits: [],
    total_commits_count: 0,
  };
}
