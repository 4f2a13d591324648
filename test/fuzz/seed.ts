import { accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createModule, createVersion, publish } from '../helpers/registry.js';
import { createUserWithToken, type TestServer } from '../helpers/server.js';
import { createRun, uploadedConfiguration } from '../helpers/runs.js';
import { createWorkspace, jsonStateOutputs, lock, md5, pushState, stateFixture } from '../helpers/state.js';

/**
 * Two tenants, each with everything a route can address: users (an owner, a member whose only
 * team may read but change nothing, a pending invitee), teams with and without permissions and their tokens,
 * an organization token, an agent pool, a retention policy, projects, tags and tag bindings, workspaces with a processed state
 * version (outputs included) and a pending one (live upload URLs), a module with a published
 * version and a pending one (a live upload URL), and signed archive and state download URLs.
 */
export interface Tenant {
  org: string;
  owner: { id: string; username: string; token: string };
  /** Member of the organization through the readers team (read-state-outputs only). */
  reader: { id: string; username: string; token: string; membershipId: string };
  /** Token of the readers team: sees workspaces and outputs, may change nothing. */
  readerTeamToken: string;
  /** Token of a team with every organization permission. */
  opsTeamToken: string;
  orgToken: string;
  /**
   * Path parameter values naming this tenant's resources, keyed by valueKind() (fuzz/routes.ts).
   * Every value here exists.
   */
  values: Record<string, string[]>;
}

export async function seedTenant(t: TestServer, name: string): Promise<Tenant> {
  const owner = await createUserWithToken(t, `${name}-owner`);
  const readerUser = await createUserWithToken(t, `${name}-reader`);
  const invitee = await createUserWithToken(t, `${name}-invitee`);
  await createOrg(t, name, { token: owner.token });

  // Readers see workspaces and their outputs and may change nothing.
  const readers = await createTeam(t, owner.token, name, 'readers', { 'organization-access': { 'read-state-outputs': true } });
  const ops = await createTeam(t, owner.token, name, 'ops', {
    'organization-access': { 'manage-workspaces': true, 'manage-modules': true, 'read-state-outputs': true },
  });
  const readerMembership = await invite(t, owner.token, name, readerUser.username, [readers.id]);
  await accept(t, readerUser.token, readerMembership);
  const pendingMembership = await invite(t, owner.token, name, invitee.username);
  const ownerMemberships = await ok(t, 'GET', `/api/v2/organizations/${name}/organization-memberships?page%5Bsize%5D=100`, owner.token);
  const membershipIds: string[] = ownerMemberships.data.map((m: { id: string }) => m.id);

  const teamToken = async (teamId: string) =>
    (await ok(t, 'POST', `/api/v2/teams/${teamId}/authentication-token`, owner.token, { data: { type: 'authentication-tokens', attributes: {} } })).data
      .attributes.token as string;
  const readerTeamToken = await teamToken(readers.id);
  const opsTeamToken = await teamToken(ops.id);
  const orgToken = (await ok(t, 'POST', `/api/v2/organizations/${name}/authentication-token`, owner.token, { data: { type: 'authentication-tokens', attributes: {} } }))
    .data.attributes.token as string;
  const ownerTokens = await ok(t, 'GET', `/api/v2/users/${owner.id}/authentication-tokens`, owner.token);

  const pool = await ok(t, 'POST', `/api/v2/organizations/${name}/agent-pools`, owner.token, { data: { type: 'agent-pools', attributes: { name: 'pool' } } });
  await ok(t, 'POST', `/api/v2/organizations/${name}/relationships/data-retention-policy`, owner.token, {
    data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 30 } },
  });

  // A processed state version with outputs, and a pending one whose upload URLs stay live.
  const web = await createWorkspace(t, name, 'web', owner.token);
  const db = await createWorkspace(t, name, 'db', owner.token);
  await lock(t, web.id, owner.token);
  const state = stateFixture('outputs-serial1.json');
  const pushed = await pushState(t, web.id, state, {
    'json-state-outputs': Buffer.from(JSON.stringify(jsonStateOutputs(state))).toString('base64'),
    'json-state': Buffer.from(JSON.stringify({ format_version: '1.0', values: {} })).toString('base64'),
  }, owner.token);
  if (pushed.status !== 201) throw new Error(`push state: ${pushed.status} ${pushed.text}`);
  await t.running.jobs.runDue();
  const svId: string = pushed.json.data.id;
  const sv = await ok(t, 'GET', `/api/v2/state-versions/${svId}`, owner.token);
  const outputs = await ok(t, 'GET', `/api/v2/state-versions/${svId}/outputs?page%5Bsize%5D=100`, owner.token);
  // Two pending versions: a refused PUT to a state upload URL removes its version (README), which
  // must not take the JSON upload URL under test with it.
  const cache = await createWorkspace(t, name, 'cache', owner.token);
  const pendingIn = async (wsId: string) => {
    await lock(t, wsId, owner.token);
    const other = stateFixture('outputs-serial2.json');
    const parsed = JSON.parse(other.toString('utf8')) as { serial: number; lineage: string };
    const r = await ok(t, 'POST', `/api/v2/workspaces/${wsId}/state-versions`, owner.token, {
      data: { type: 'state-versions', attributes: { serial: parsed.serial, md5: md5(other), lineage: parsed.lineage } },
    });
    return { id: r.data.id as string, state: new URL(r.data.attributes['hosted-state-upload-url']), json: new URL(r.data.attributes['hosted-json-state-upload-url']) };
  };
  // Tags, a binding and a project besides the default one.
  await ok(t, 'POST', `/api/v2/workspaces/${web.id}/relationships/tags`, owner.token, { data: [{ type: 'tags', attributes: { name: 'frontend' } }] });
  await ok(t, 'PATCH', `/api/v2/workspaces/${web.id}/tag-bindings`, owner.token, { data: [{ type: 'tag-bindings', attributes: { key: 'env', value: 'prod' } }] });
  await ok(t, 'POST', `/api/v2/organizations/${name}/projects`, owner.token, { data: { type: 'projects', attributes: { name: 'platform' } } });
  const projects = await ok(t, 'GET', `/api/v2/organizations/${name}/projects`, owner.token);
  const tags = await ok(t, 'GET', `/api/v2/organizations/${name}/tags`, owner.token);
  const pending = await pendingIn(db.id);
  const pendingJson = await pendingIn(cache.id);
  const stateDownload = new URL(sv.data.attributes['hosted-state-download-url'] as string);

  // A published module version, and a pending one whose upload URL stays live.
  await publish(t, name, 'vpc', 'aws', '1.0.0');
  await createModule(t, name, 'dns', 'aws');
  const pendingVersion = await createVersion(t, name, 'vpc', 'aws', '1.1.0');
  const moduleUpload = new URL(pendingVersion.links.upload);
  const download = await t.api('GET', `/v1/modules/${name}/vpc/aws/1.0.0/download`, { token: owner.token });
  const archive = download.headers.get('x-terraform-get');
  if (download.status !== 204 || !archive) throw new Error(`download: ${download.status} ${download.text}`);

  // An uploaded configuration version with a run, and a pending one whose upload URL stays live.
  const cvId = await uploadedConfiguration(t, web.id, owner.token);
  const run = await createRun(t, web.id, cvId, {}, owner.token);
  if (run.status !== 201) throw new Error(`create run: ${run.status} ${run.text}`);
  const pendingCv = await ok(t, 'POST', `/api/v2/workspaces/${web.id}/configuration-versions`, owner.token, { data: { type: 'configuration-versions', attributes: {} } });

  const segments = (u: URL | string) => (typeof u === 'string' ? new URL(u, 'http://x') : u).pathname.split('/').slice(1);
  const [, versionId, archiveCapability, archiveFile] = segments(archive);
  const [, svDownloadId, stateCapability, stateFile] = segments(stateDownload);

  return {
    org: name,
    owner,
    reader: { ...readerUser, membershipId: readerMembership },
    readerTeamToken,
    opsTeamToken,
    orgToken,
    values: {
      'users.user_id': [owner.id, owner.username, readerUser.id, invitee.username],
      'authentication-tokens.id': ownerTokens.data.map((x: { id: string }) => x.id),
      'organizations.name': [name],
      'organizations.org': [name],
      'agent-pools.id': [pool.data.id],
      'organization-memberships.id': [...new Set([...membershipIds, pendingMembership])],
      'teams.id': [readers.id, ops.id],
      'workspaces.name': ['web', 'db', 'cache'],
      'workspaces.workspace_id': [web.id, db.id, cache.id],
      'projects.project_id': projects.data.map((x: { id: string }) => x.id),
      'tags.tag_id': tags.data.map((x: { id: string }) => x.id),
      'state-versions.id': [svId, svId, pending.id, pendingJson.id],
      'state-version-outputs.id': outputs.data.map((o: { id: string }) => o.id),
      'module.namespace': [name],
      'module.name': ['vpc', 'vpc', 'dns'],
      'module.provider': ['aws'],
      'module.version': ['1.0.0', '1.0.0', '1.1.0'],
      'archives.versionId': [versionId!],
      'archives.capability': [archiveCapability!],
      'archives.file': [archiveFile!],
      'state-files.svId': [svDownloadId!],
      'state-files.capability': [stateCapability!],
      'state-files.file': [stateFile!, 'json-state.json'],
      'modules.token': [segments(moduleUpload)[2]!],
      'state.token': [segments(pending.state)[2]!],
      'state-json.token': [segments(pendingJson.json)[2]!],
      'configuration-versions.id': [cvId, pendingCv.data.id],
      'configuration-versions.token': [segments(pendingCv.data.attributes['upload-url'])[2]!],
      'runs.id': [run.json.data.id],
    },
  };
}

async function ok(t: TestServer, method: string, path: string, token: string, body?: unknown) {
  const r = await t.api(method, path, { token, body });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.json;
}
