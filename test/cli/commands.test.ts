import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allCommands, main } from '../../src/cli/main.js';
import { BIN, hasCommand, homeWithToken, terrace } from '../helpers/cli.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { RFC3339 } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

// The everyday commands against a real server, help on every command, and shell completion.
let t: TestServer;
let home: string;

beforeAll(async () => {
  t = await startTestServer();
  home = homeWithToken(t, t.adminToken);
  await createOrganization(t, 'acme');
  await publish(t, 'acme', 'network', 'aws', '1.0.0', { 'main.tf': 'variable "cidr" {\n  type        = string\n  description = "The VPC range"\n}\noutput "id" {\n  value = 1\n}\n', 'README.md': '# Network\n\nA VPC and subnets.\n' });
  await publish(t, 'acme', 'network', 'aws', '1.1.0');
  await publish(t, 'acme', 'storage', 'aws', '0.1.0', { 'main.tf': 'output "bucket" {\n  value = 1\n}\n', 'README.md': '# Storage\n\nBuckets.\n' });
});
afterAll(async () => {
  await t.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const run = (...args: string[]) => terrace([...args, '--host', t.url], { home });

describe('help and usage', () => {
  it('every command has --help, in process for speed (the same main() the entry point runs)', async () => {
    for (const c of allCommands()) {
      const out = new PassThrough();
      let text = '';
      out.on('data', (b) => (text += b));
      const code = await main([...c.name.split(' '), '--help'], {}, { stdout: out, stderr: out, stdin: new PassThrough() });
      expect(code, c.name).toBe(0);
      expect(text, c.name).toContain(`Usage: terrace ${c.name}`);
      expect(text, c.name).toContain('--json');
    }
  });

  it('answers help, unknown commands and missing arguments through the real entry point', async () => {
    const help = await terrace(['--help'], { home });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes: 0 ok, 1 failed, 2 usage error, 3 missing or rejected credentials, 4 not found,');
    const group = await terrace(['teams'], { home });
    expect(group.code).toBe(2);
    expect(group.stdout).toContain('  teams add-member <team> <username...>');
    const unknown = await terrace(['deploy'], { home });
    expect(unknown).toMatchObject({ code: 2, stderr: 'error: unknown command "deploy"\nhint: run `terrace --help` for the list\n' });
    const missing = await terrace(['orgs', 'create'], { home });
    expect(missing).toMatchObject({ code: 2, stderr: 'error: missing argument: terrace orgs create <name>\nhint: run `terrace orgs create --help`\n' });
  });
});

describe('modules', () => {
  it('searches, shows and lists versions', async () => {
    const search = await run('modules', 'search', 'vpc', '--json');
    expect(search.code).toBe(0);
    expect(JSON.parse(search.stdout).map((m: { id: string }) => m.id)).toEqual(['acme/network/aws/1.1.0']);
    const show = await run('modules', 'show', 'acme/network/aws', '--version', '1.0.0');
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('acme/network/aws 1.0.0\nA VPC and subnets.\n');
    expect(show.stdout).toContain('versions: 1.1.0, 1.0.0');
    expect(show.stdout).toMatch(/cidr\s+string\s+true\s+The VPC range/);
    const versions = await run('modules', 'versions', 'acme/network/aws', '--json');
    expect(JSON.parse(versions.stdout)).toEqual([{ version: '1.0.0', status: 'ok', error: '' }, { version: '1.1.0', status: 'ok', error: '' }]);
    const list = await run('modules', 'list', '--org', 'acme');
    expect(list.stdout.split('\n')[0]).toMatch(/^MODULE\s+LATEST\s+PUBLISHED\s+DOWNLOADS$/);
    expect(list.stdout).toMatch(/acme\/storage\/aws\s+0\.1\.0/);
  });

  it('deletes a version only when confirmed', async () => {
    const refused = await run('modules', 'delete-version', 'acme/network/aws', '1.0.0');
    expect(refused).toMatchObject({ code: 2, stderr: 'error: delete acme/network/aws 1.0.0: refusing without confirmation\nhint: add --yes to confirm\n' });
    expect((await t.api('GET', '/v1/modules/acme/network/aws/1.0.0')).status).toBe(200);
    const done = await run('modules', 'delete-version', 'acme/network/aws', '1.0.0', '--yes');
    expect(done).toMatchObject({ code: 0, stdout: 'deleted acme/network/aws 1.0.0\n' });
    expect((await t.api('GET', '/v1/modules/acme/network/aws/1.0.0')).status).toBe(404);
    const gone = await run('modules', 'delete-version', 'acme/network/aws', '1.0.0', '--yes');
    expect(gone.code).toBe(4);
    expect(gone.stderr).toContain('error: deleting acme/network/aws 1.0.0: not found (version 1.0.0 of acme/network/aws does not exist)');
  });
});

describe('administration', () => {
  it('creates a user and a token; lists and revokes tokens', async () => {
    const user = await run('users', 'create', 'carol', '--email', 'carol@example.com', '--json');
    expect(user.code).toBe(0);
    expect(JSON.parse(user.stdout)).toMatchObject({ id: expect.stringMatching(/^user-/), type: 'users', attributes: { username: 'carol', 'is-site-admin': false } });
    const tok = await run('tokens', 'create', '--user', 'carol', '--description', 'ci');
    expect(tok.code).toBe(0);
    const token = tok.stdout.trim();
    expect(token).toMatch(/\.terrace\./);
    const me = await terrace(['whoami', '--host', t.url, '--json'], { home, env: { [`TF_TOKEN_127_0_0_1`]: 'unused' } });
    expect(JSON.parse(me.stdout).username).toBe('admin'); // a port cannot be written in TF_TOKEN_: the file's token is used
    const list = await run('tokens', 'list', '--user', 'carol', '--json');
    const tokens = JSON.parse(list.stdout);
    expect(tokens).toHaveLength(1);
    expect(tokens[0]).toMatchObject({ id: expect.stringMatching(/^at-/), attributes: { description: 'ci', 'created-at': expect.stringMatching(RFC3339) } });
    const del = await run('tokens', 'delete', tokens[0].id, '--yes');
    expect(del.code).toBe(0);
    const r = await t.api('GET', '/api/v2/account/details', { token });
    expect(r.status).toBe(401);
  });

  it('creates an organization, a team with members, invites and removes a member, and deletes it all', async () => {
    const dave = await createUserWithToken(t, 'dave');
    expect((await run('orgs', 'create', 'globex', '--email', 'ops@globex.example')).code).toBe(0);
    const orgs = JSON.parse((await run('orgs', 'list', '--json')).stdout);
    expect(orgs.map((o: { name: string }) => o.name).sort()).toEqual(['acme', 'globex']);
    const team = await run('teams', 'create', 'publishers', '--org', 'globex', '--permission', 'manage-modules', '--json');
    expect(team.code).toBe(0);
    expect(JSON.parse(team.stdout).attributes['organization-access']['manage-modules']).toBe(true);
    const invite = await run('members', 'invite', 'dave@example.com', '--org', 'globex', '--team', 'publishers', '--json');
    expect(invite.code).toBe(0);
    const ou = JSON.parse(invite.stdout);
    expect(ou).toMatchObject({ type: 'organization-memberships', attributes: { status: 'invited', email: 'dave@example.com' } });
    expect((await t.api('POST', `/api/v2/organization-memberships/${ou.id}/actions/accept`, { token: dave.token })).status).toBe(200);
    const members = JSON.parse((await run('members', 'list', '--org', 'globex', '--json')).stdout);
    expect(members.map((m: { attributes: { email: string; status: string } }) => `${m.attributes.email} ${m.attributes.status}`).sort()).toEqual(['admin@terrace.invalid active', 'dave@example.com active']);
    const teams = JSON.parse((await run('teams', 'list', '--org', 'globex', '--json')).stdout);
    expect(teams.find((x: { attributes: { name: string } }) => x.attributes.name === 'publishers').attributes['users-count']).toBe(1);
    expect((await run('teams', 'remove-member', 'publishers', 'dave', '--org', 'globex')).code).toBe(0);
    const after = JSON.parse((await run('teams', 'list', '--org', 'globex', '--json')).stdout);
    expect(after.find((x: { attributes: { name: string } }) => x.attributes.name === 'publishers').attributes['users-count']).toBe(0);
    expect((await run('members', 'remove', 'dave@example.com', '--org', 'globex', '--yes')).code).toBe(0);
    expect((await run('teams', 'delete', 'publishers', '--org', 'globex', '--yes')).code).toBe(0);
    expect((await run('orgs', 'delete', 'globex', '--yes')).code).toBe(0);
    expect((await t.api('GET', '/api/v2/organizations/globex')).status).toBe(404);
  });

  it('reports what the server refused, with its reason', async () => {
    const r = await run('teams', 'create', 'bad name!', '--org', 'acme');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: creating team bad name! in acme: name: /);
  });
});

describe('completion', () => {
  it.runIf(hasCommand('bash'))('completes commands, subcommands, options and option values in bash', () => {
    const complete = (line: string[]) => {
      const script = `source <("${process.execPath}" "${BIN}" completion bash); COMP_WORDS=(${line.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${line.length - 1}; _terrace; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const r = spawnSync('bash', ['-c', script], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home } });
      expect(r.stderr).toBe('');
      return r.stdout.trim().split('\n').filter(Boolean).sort();
    };
    expect(complete(['terrace', 'pu'])).toEqual(['publish']);
    expect(complete(['terrace', 'bundle', ''])).toEqual(['export', 'import', 'verify']);
    expect(complete(['terrace', 'publish', '--version-'])).toEqual(['--version-file', '--version-from']);
    expect(complete(['terrace', 'publish', '--version-from', ''])).toEqual(['file', 'tags']);
    expect(complete(['terrace', 'teams', 'create', '--per'])).toEqual(['--permission']);
  });

  it.runIf(hasCommand('zsh'))('prints a zsh script that zsh parses', () => {
    const r = spawnSync('zsh', ['-n', '-c', `source <("${process.execPath}" "${BIN}" completion zsh)`], { encoding: 'utf8' });
    expect(r.status).toBe(0);
  });
});
