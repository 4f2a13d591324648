import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, tempDir, type TestServer } from '../helpers/server.js';
import { tagSnapshot } from '../helpers/tags.js';
import { startTlsServer, terraform, terraformAvailable, terraformEnv, withoutTlsVerification } from '../helpers/terraform.js';

// The "done when" with the real Terraform CLI (on this machine, not on CI): the cloud
// block's three ways of choosing workspaces (list tags, key/value tags, a project) offer exactly
// the matching workspaces, and `terraform workspace new` creates one carrying the block's tags
// and project.
const HOST = 'registry.terrace.test';

describe.runIf(terraformAvailable)('the cloud block with tags and projects, through terraform', () => {
  const dir = tempDir('terrace-cloud-');
  let t: TestServer;
  let env: NodeJS.ProcessEnv;
  let token: string;

  const api = (method: string, p: string, body?: unknown) => withoutTlsVerification(() => t.api(method, p, { token, body }));
  async function workspace(name: string, opts: { tags?: string[]; bindings?: Record<string, string>; project?: string } = {}) {
    const relationships: Record<string, unknown> = {};
    if (opts.bindings) relationships['tag-bindings'] = { data: Object.entries(opts.bindings).map(([key, value]) => ({ type: 'tag-bindings', attributes: { key, value } })) };
    if (opts.project) relationships.project = { data: { type: 'projects', id: opts.project } };
    const res = await api('POST', '/api/v2/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name, ...(opts.tags ? { 'tag-names': opts.tags } : {}) }, relationships },
    });
    expect(res.status, res.text).toBe(201);
    return res.json.data;
  }
  const read = async (name: string) => (await api('GET', `/api/v2/organizations/acme/workspaces/${name}`)).json.data;

  /** A configuration directory with this cloud block's workspaces block. */
  function config(workspaces: string): string {
    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    fs.writeFileSync(path.join(work, 'main.tf'), `terraform {\n  cloud {\n    hostname     = "${HOST}"\n    organization = "acme"\n    workspaces {\n${workspaces}\n    }\n  }\n}\n`);
    return work;
  }

  /** init (selecting first through TF_WORKSPACE, as CI does) and the workspaces Terraform offers. */
  async function offered(work: string, first: string): Promise<string[]> {
    const init = await terraform(['init', '-input=false', '-no-color'], work, { ...env, TF_WORKSPACE: first });
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const list = await terraform(['workspace', 'list', '-no-color'], work, { ...env, TF_WORKSPACE: first });
    expect(list.code).toBe(0);
    // Terraform notes the TF_WORKSPACE override between the names: keep only the names.
    return list.stdout.split('\n').map((l) => l.replace(/^\*/, '').trim()).filter((l) => /^[A-Za-z0-9_-]+$/.test(l)).sort();
  }

  async function workspaceNew(work: string, name: string) {
    const res = await terraform(['workspace', 'new', '-no-color', name], work, env);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    return read(name);
  }

  let platform: { id: string };

  beforeAll(async () => {
    const started = await startTlsServer(dir, HOST);
    t = started.server;
    await withoutTlsVerification(async () => {
      const owner = await createUserWithToken(t, 'cloud-owner');
      token = owner.token;
      await createOrg(t, 'acme', { token, attributes: { 'default-execution-mode': 'local' } });
    });
    platform = (await api('POST', '/api/v2/organizations/acme/projects', { data: { type: 'projects', attributes: { name: 'platform' } } })).json.data;
    await workspace('web-1', { tags: ['web'] });
    await workspace('web-2', { tags: ['web', 'prod'] });
    await workspace('api-1', { tags: ['api'] });
    await workspace('kv-prod', { bindings: { env: 'prod', team: 'core' } });
    await workspace('kv-dev', { bindings: { env: 'dev', team: 'core' } });
    await workspace('plat-a', { tags: ['svc'], project: platform.id });
    await workspace('other-a', { tags: ['svc'] });
    env = terraformEnv(dir, HOST, t, token, started.cert);
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('tags = ["web"]: init offers the tagged workspaces; workspace new creates one with the tag', async () => {
    const work = config('      tags = ["web"]');
    expect(await offered(work, 'web-1')).toEqual(['web-1', 'web-2']);
    const created = await workspaceNew(work, 'web-3');
    expect(created.attributes['tag-names']).toEqual(['web']);
    expect(created.relationships.project.data.id).toBe((await read('web-1')).relationships.project.data.id);
    expect(await offered(work, 'web-1')).toEqual(['web-1', 'web-2', 'web-3']);
  });

  it('a caller who may only read workspaces can init with list tags (nothing to write)', async () => {
    const reader = await withoutTlsVerification(async () => {
      const u = await createUserWithToken(t, 'cloud-reader');
      const team = await createTeam(t, token, 'acme', 'readers', { 'organization-access': { 'read-state-outputs': true } });
      await accept(t, u.token, await invite(t, token, 'acme', 'cloud-reader', [team.id]));
      return u;
    });
    const before = await withoutTlsVerification(() => tagSnapshot(t));
    const work = config('      tags = ["web"]');
    const readerEnv = terraformEnv(dir, HOST, t, reader.token, env.SSL_CERT_FILE!);
    const init = await terraform(['init', '-input=false', '-no-color'], work, { ...readerEnv, TF_WORKSPACE: 'web-2' });
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(await tagSnapshot(t)).toEqual(before);
  });

  it('tags = { env = "prod" }: init offers the workspaces with that binding; workspace new binds it', async () => {
    const work = config('      tags = { env = "prod", team = "core" }');
    expect(await offered(work, 'kv-prod')).toEqual(['kv-prod']);
    const created = await workspaceNew(work, 'kv-prod-2');
    const bindings = (await api('GET', `/api/v2/workspaces/${created.id}/tag-bindings`)).json.data;
    expect(bindings.map((b: any) => [b.attributes.key, b.attributes.value])).toEqual([['env', 'prod'], ['team', 'core']]);
    expect(await offered(work, 'kv-prod')).toEqual(['kv-prod', 'kv-prod-2']);
  });

  it('project = "platform": init offers only that project\'s workspaces; workspace new puts one there', async () => {
    const work = config('      project = "platform"\n      tags    = ["svc"]');
    expect(await offered(work, 'plat-a')).toEqual(['plat-a']);
    const created = await workspaceNew(work, 'plat-b');
    expect(created.relationships.project.data).toEqual({ id: platform.id, type: 'projects' });
    expect(created.attributes['tag-names']).toEqual(['svc']);
  });

  it('a project that does not exist yet is created with the workspace init asks for', async () => {
    const work = config('      project = "fresh"\n      tags    = ["batch"]');
    // No workspace matches: init asks for the name of one to create.
    const init = await terraform(['init', '-no-color'], work, env, 'fresh-1\n');
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const created = await read('fresh-1');
    expect(created.attributes['tag-names']).toEqual(['batch']);
    const project = (await api('GET', `/api/v2/projects/${created.relationships.project.data.id}`)).json.data;
    expect(project.attributes.name).toBe('fresh');
  });
});
