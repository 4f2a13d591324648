// Organizations, teams, members, tokens and users: thin wrappers over the JSON:API.
import type { Api } from './client.js';
import { bool, list, str, type Command } from './command.js';
import { CliError, EXIT, usageError } from './errors.js';
import { allPages, confirm, table } from './ui.js';

const seg = encodeURIComponent;
const yes = { yes: { type: 'boolean' as const, short: 'y', description: 'do not ask for confirmation' } };
const orgOption = { org: { type: 'string' as const, value: '<org>', description: 'the organization (required)' } };
const PERMISSIONS = ['manage-modules', 'manage-projects', 'manage-run-tasks', 'manage-vcs-settings', 'manage-workspaces', 'read-state-outputs'];

function requireOrg(p: Parameters<Command['run']>[1]): string {
  const org = str(p, 'org');
  if (!org) throw usageError('--org is required', 'name the organization: --org <org>');
  return org;
}

/** A team's id from its name (or an id given as is). */
async function teamId(api: Api, org: string, team: string): Promise<string> {
  if (/^team-/.test(team)) return team;
  const res = await api.api('GET', `organizations/${seg(org)}/teams?filter%5Bnames%5D=${seg(team)}`, undefined, `finding team ${team} in ${org}`);
  const found = (res.json.data as any[]).find((t) => t.attributes.name === team);
  if (!found) throw new CliError(`no team "${team}" in organization ${org}`, EXIT.notFound, `list them with \`terrace teams list --org ${org}\``);
  return found.id;
}

/** The user a token command is about: --user, else the caller. */
async function userRef(api: Api, user: string | undefined): Promise<string> {
  if (user) return user;
  const me = await api.api('GET', 'account/details', undefined, 'reading your account');
  return me.json.data.id;
}

export const adminCommands: Command[] = [
  {
    name: 'orgs list',
    summary: 'List the organizations you belong to',
    async run(ctx) {
      const api = await ctx.api();
      const res = await api.api('GET', 'organizations', undefined, 'listing organizations');
      const orgs = (res.json.data as any[]).map((o) => ({ name: o.id, email: o.attributes.email, created: o.attributes['created-at'] }));
      ctx.emit(orgs, () => table(ctx, orgs, ['name', 'email', 'created'], 'no organizations'));
    },
  },
  {
    name: 'orgs create',
    summary: 'Create an organization (you become its owner)',
    args: '<name>',
    minArgs: 1,
    maxArgs: 1,
    options: { email: { type: 'string', value: '<email>', description: 'the organization\'s contact email (required)' } },
    async run(ctx, p) {
      const email = str(p, 'email');
      if (!email) throw usageError('--email is required', 'the organization\'s contact address, e.g. --email platform@acme.example');
      const api = await ctx.api();
      const res = await api.api('POST', 'organizations', { data: { type: 'organizations', attributes: { name: p.positionals[0], email } } }, `creating organization ${p.positionals[0]}`);
      ctx.emit(res.json.data, () => ctx.out(`created organization ${res.json.data.id}`));
    },
  },
  {
    name: 'orgs delete',
    summary: 'Delete an organization and everything it owns',
    args: '<name>',
    minArgs: 1,
    maxArgs: 1,
    options: yes,
    async run(ctx, p) {
      const name = p.positionals[0]!;
      await confirm(ctx, bool(p, 'yes'), `delete organization ${name} with all its modules, teams and workspaces`);
      const api = await ctx.api();
      await api.api('DELETE', `organizations/${seg(name)}`, undefined, `deleting organization ${name}`);
      ctx.emit({ deleted: { organization: name } }, () => ctx.out(`deleted organization ${name}`));
    },
  },
  {
    name: 'teams list',
    summary: 'List an organization\'s teams with their permissions and members',
    options: orgOption,
    async run(ctx, p) {
      const org = requireOrg(p);
      const api = await ctx.api();
      const teams = await allPages(api, `organizations/${seg(org)}/teams?include=users`, `listing teams of ${org}`);
      const rows = teams.map((t) => ({
        id: t.id,
        name: t.attributes.name,
        visibility: t.attributes.visibility,
        members: t.attributes['users-count'],
        permissions: Object.entries(t.attributes['organization-access'] ?? {}).filter(([, v]) => v === true).map(([k]) => k).join(',') || null,
      }));
      ctx.emit(teams, () => table(ctx, rows, ['name', 'id', 'visibility', 'members', 'permissions'], 'no teams'));
    },
  },
  {
    name: 'teams create',
    summary: 'Create a team with organization permissions',
    args: '<name>',
    minArgs: 1,
    maxArgs: 1,
    options: {
      ...orgOption,
      permission: { type: 'string', multiple: true, value: '<permission>', choices: PERMISSIONS, description: `grant a permission (repeatable): ${PERMISSIONS.join(', ')}` },
      secret: { type: 'boolean', description: 'visible only to owners and the team\'s members' },
    },
    async run(ctx, p) {
      const org = requireOrg(p);
      const access: Record<string, boolean> = {};
      for (const perm of list(p, 'permission')) {
        if (!PERMISSIONS.includes(perm)) throw usageError(`unknown permission "${perm}"`, `use one of ${PERMISSIONS.join(', ')}`);
        access[perm] = true;
      }
      const api = await ctx.api();
      const attributes: Record<string, unknown> = { name: p.positionals[0], 'organization-access': access };
      if (bool(p, 'secret')) attributes.visibility = 'secret';
      const res = await api.api('POST', `organizations/${seg(org)}/teams`, { data: { type: 'teams', attributes } }, `creating team ${p.positionals[0]} in ${org}`);
      ctx.emit(res.json.data, () => ctx.out(`created team ${res.json.data.attributes.name} (${res.json.data.id}) in ${org}`));
    },
  },
  {
    name: 'teams delete',
    summary: 'Delete a team (by name or id)',
    args: '<team>',
    minArgs: 1,
    maxArgs: 1,
    options: { ...orgOption, ...yes },
    async run(ctx, p) {
      const org = requireOrg(p);
      await confirm(ctx, bool(p, 'yes'), `delete team ${p.positionals[0]} of ${org}`);
      const api = await ctx.api();
      const id = await teamId(api, org, p.positionals[0]!);
      await api.api('DELETE', `teams/${seg(id)}`, undefined, `deleting team ${p.positionals[0]}`);
      ctx.emit({ deleted: { team: id } }, () => ctx.out(`deleted team ${p.positionals[0]}`));
    },
  },
  ...(['add-member', 'remove-member'] as const).map((verb): Command => ({
    name: `teams ${verb}`,
    summary: verb === 'add-member' ? 'Add organization members to a team (by username)' : 'Remove members from a team (by username)',
    args: '<team> <username...>',
    minArgs: 2,
    maxArgs: 100,
    options: orgOption,
    async run(ctx, p) {
      const org = requireOrg(p);
      const [team, ...users] = p.positionals as [string, ...string[]];
      const api = await ctx.api();
      const id = await teamId(api, org, team);
      await api.api(verb === 'add-member' ? 'POST' : 'DELETE', `teams/${seg(id)}/relationships/users`, { data: users.map((u) => ({ type: 'users', id: u })) }, `${verb === 'add-member' ? 'adding' : 'removing'} ${users.join(', ')} ${verb === 'add-member' ? 'to' : 'from'} team ${team}`);
      ctx.emit({ team: id, users, action: verb }, () => ctx.out(`${verb === 'add-member' ? 'added' : 'removed'} ${users.join(', ')} ${verb === 'add-member' ? 'to' : 'from'} ${team}`));
    },
  })),
  {
    name: 'members list',
    summary: 'List an organization\'s members and invitations',
    options: orgOption,
    async run(ctx, p) {
      const org = requireOrg(p);
      const api = await ctx.api();
      const members = await allPages(api, `organizations/${seg(org)}/organization-memberships`, `listing members of ${org}`);
      const rows = members.map((m) => ({ id: m.id, email: m.attributes.email, status: m.attributes.status, user: m.relationships?.user?.data?.id, teams: (m.relationships?.teams?.data ?? []).length }));
      ctx.emit(members, () => table(ctx, rows, ['email', 'status', 'id', 'user', 'teams'], 'no members'));
    },
  },
  {
    name: 'members invite',
    summary: 'Invite an existing user into an organization by email (optionally into teams)',
    args: '<email>',
    minArgs: 1,
    maxArgs: 1,
    options: { ...orgOption, team: { type: 'string', multiple: true, value: '<team>', description: 'also add to this team (repeatable)' } },
    async run(ctx, p) {
      const org = requireOrg(p);
      const api = await ctx.api();
      const teams = await Promise.all(list(p, 'team').map((t) => teamId(api, org, t)));
      const res = await api.api('POST', `organizations/${seg(org)}/organization-memberships`, {
        data: { type: 'organization-memberships', attributes: { email: p.positionals[0] }, relationships: { teams: { data: teams.map((id) => ({ type: 'teams', id })) } } },
      }, `inviting ${p.positionals[0]} into ${org}`);
      ctx.emit(res.json.data, () => ctx.out(`invited ${p.positionals[0]} into ${org} (${res.json.data.id}); they accept with POST /api/v2/organization-memberships/${res.json.data.id}/actions/accept`));
    },
  },
  {
    name: 'members remove',
    summary: 'Remove a member (or withdraw an invitation) by email or membership id',
    args: '<email|ou-id>',
    minArgs: 1,
    maxArgs: 1,
    options: { ...orgOption, ...yes },
    async run(ctx, p) {
      const org = requireOrg(p);
      const who = p.positionals[0]!;
      const api = await ctx.api();
      let id = who;
      if (!/^ou-/.test(who)) {
        const members = await allPages(api, `organizations/${seg(org)}/organization-memberships?filter%5Bemail%5D=${seg(who)}`, `finding ${who} in ${org}`);
        const m = members.find((x) => String(x.attributes.email).toLowerCase() === who.toLowerCase());
        if (!m) throw new CliError(`${who} is not a member of ${org}`, EXIT.notFound, `list them with \`terrace members list --org ${org}\``);
        id = m.id;
      }
      await confirm(ctx, bool(p, 'yes'), `remove ${who} from ${org}`);
      await api.api('DELETE', `organization-memberships/${seg(id)}`, undefined, `removing ${who} from ${org}`);
      ctx.emit({ removed: { membership: id } }, () => ctx.out(`removed ${who} from ${org}`));
    },
  },
  {
    name: 'tokens list',
    summary: 'List a user\'s API tokens (yours by default)',
    options: { user: { type: 'string', value: '<user>', description: 'username or user id (site admins: anyone\'s)' } },
    async run(ctx, p) {
      const api = await ctx.api();
      const user = await userRef(api, str(p, 'user'));
      const tokens = await allPages(api, `users/${seg(user)}/authentication-tokens`, `listing tokens of ${user}`);
      const rows = tokens.map((t) => ({ id: t.id, description: t.attributes.description, created: t.attributes['created-at'], 'last-used': t.attributes['last-used-at'], expires: t.attributes['expired-at'] }));
      ctx.emit(tokens, () => table(ctx, rows, ['id', 'description', 'created', 'last-used', 'expires'], 'no tokens'));
    },
  },
  {
    name: 'tokens create',
    summary: 'Create an API token (printed once)',
    options: {
      user: { type: 'string', value: '<user>', description: 'username or user id (default: you; site admins: anyone)' },
      description: { type: 'string', value: '<text>', description: 'what the token is for' },
      'expires-at': { type: 'string', value: '<time>', description: 'RFC 3339 expiry time, e.g. 2027-01-01T00:00:00Z' },
    },
    async run(ctx, p) {
      const api = await ctx.api();
      const user = await userRef(api, str(p, 'user'));
      const attributes: Record<string, unknown> = {};
      if (str(p, 'description')) attributes.description = str(p, 'description');
      if (str(p, 'expires-at')) attributes['expired-at'] = str(p, 'expires-at');
      const res = await api.api('POST', `users/${seg(user)}/authentication-tokens`, { data: { type: 'authentication-tokens', attributes } }, `creating a token for ${user}`);
      ctx.emit(res.json.data, () => {
        ctx.err(`created token ${res.json.data.id}; it is shown only now:`);
        ctx.out(res.json.data.attributes.token);
      });
    },
  },
  {
    name: 'tokens delete',
    summary: 'Delete (revoke) an API token by id',
    args: '<at-id>',
    minArgs: 1,
    maxArgs: 1,
    options: yes,
    async run(ctx, p) {
      await confirm(ctx, bool(p, 'yes'), `revoke token ${p.positionals[0]}`);
      const api = await ctx.api();
      await api.api('DELETE', `authentication-tokens/${seg(p.positionals[0]!)}`, undefined, `deleting token ${p.positionals[0]}`);
      ctx.emit({ deleted: { token: p.positionals[0] } }, () => ctx.out(`deleted token ${p.positionals[0]}`));
    },
  },
  {
    name: 'users create',
    summary: 'Create a user (site admins only)',
    args: '<username>',
    minArgs: 1,
    maxArgs: 1,
    options: {
      email: { type: 'string', value: '<email>', description: 'the user\'s email (required)' },
      'site-admin': { type: 'boolean', description: 'make the user a site admin' },
    },
    async run(ctx, p) {
      const email = str(p, 'email');
      if (!email) throw usageError('--email is required');
      const api = await ctx.api();
      const res = await api.api('POST', 'admin/users', { data: { type: 'users', attributes: { username: p.positionals[0], email, 'is-site-admin': bool(p, 'site-admin') } } }, `creating user ${p.positionals[0]}`);
      ctx.emit(res.json.data, () => ctx.out(`created user ${res.json.data.attributes.username} (${res.json.data.id}); give them a token with \`terrace tokens create --user ${res.json.data.attributes.username}\``));
    },
  },
];
