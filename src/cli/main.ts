// The `terrace` command: a client of Terrace's public API (discovery, /api/v2, the registry
// protocol), nothing more. Entry point: bin/terrace.js.
import { parseArgs } from 'node:util';
import { adminCommands } from './admin.js';
import { bundleCommands } from './bundle.js';
import { connect, type Api } from './client.js';
import type { Command, Ctx, OptionSpec, Parsed } from './command.js';
import { completionCommand } from './completion.js';
import { encryptionCommands } from './encryption.js';
import { CliError, EXIT, usageError } from './errors.js';
import { loginCommands } from './login.js';
import { moduleCommands } from './modules.js';
import { publishCommand } from './publish-cmd.js';
import type { Env } from './tfconfig.js';

export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  host: { type: 'string', value: '<host>', description: 'Terrace host (registry.example.com[:port], or an http(s):// URL); default TERRACE_HOST, else the last `terrace login`' },
  json: { type: 'boolean', description: 'print machine-readable JSON on stdout' },
  help: { type: 'boolean', short: 'h', description: 'show help for the command' },
};

export function allCommands(): Command[] {
  return [...loginCommands, publishCommand, ...moduleCommands, ...adminCommands, ...encryptionCommands, ...bundleCommands, completionCommand];
}

/** Groups ("orgs", "teams", …) and their one-line descriptions, for help and completion. */
export const GROUPS: Record<string, string> = {
  modules: 'search, show and delete modules and versions',
  orgs: 'list, create and delete organizations',
  teams: 'list, create and delete teams; add and remove their members',
  members: 'list, invite and remove organization members',
  tokens: 'list, create and delete user API tokens',
  users: 'create users (site admins)',
  admin: 'site administration: the encryption at rest status',
  bundle: 'export modules to one file and import it elsewhere (air-gapped sites)',
};

function optionsOf(cmd: Command): Record<string, OptionSpec> {
  return { ...cmd.options, ...GLOBAL_OPTIONS };
}

function helpFor(cmd: Command): string {
  const opts = optionsOf(cmd);
  const lines = [`Usage: terrace ${cmd.name}${cmd.args ? ` ${cmd.args}` : ''} [options]`, '', cmd.summary, ''];
  if (cmd.details) lines.push(cmd.details, '');
  lines.push('Options:');
  const rows = Object.entries(opts).map(([k, o]) => [`${o.short ? `-${o.short}, ` : ''}--${k}${o.value ? ` ${o.value}` : ''}`, o.description] as const);
  const w = Math.max(...rows.map((r) => r[0].length));
  for (const [a, b] of rows) lines.push(`  ${a.padEnd(w)}  ${b}`);
  return lines.join('\n');
}

function overview(commands: Command[], group?: string): string {
  const shown = commands.filter((c) => (group ? c.name.startsWith(`${group} `) : true));
  const w = Math.max(...shown.map((c) => c.name.length + (c.args ? c.args.length + 1 : 0)));
  const lines = [group ? `Usage: terrace ${group} <command> [options]` : 'Usage: terrace <command> [options]', ''];
  if (!group) lines.push('Publish and administer Terraform modules in a Terrace registry.', '');
  lines.push('Commands:');
  for (const c of shown) lines.push(`  ${`${c.name}${c.args ? ` ${c.args}` : ''}`.padEnd(w)}  ${c.summary}`);
  lines.push('', `Run \`terrace ${group ? `${group} ` : ''}<command> --help\` for a command's options.`);
  if (!group) {
    lines.push(
      '',
      'Credentials are read as Terraform reads them: TF_TOKEN_<host>, `credentials` blocks in the CLI',
      'configuration, and credentials.tfrc.json (written by `terrace login` and `terraform login`).',
      '',
      'Exit codes: 0 ok, 1 failed, 2 usage error, 3 missing or rejected credentials, 4 not found,',
      '5 server unreachable or failing.',
    );
  }
  return lines.join('\n');
}

export interface Io {
  stdout: Ctx['stdout'];
  stderr: Ctx['stderr'];
  stdin: Ctx['stdin'];
}

export async function main(argv: string[], env: Env, io: Io): Promise<number> {
  const commands = allCommands();
  const out = (s = '') => io.stdout.write(`${s}\n`);
  const err = (s = '') => io.stderr.write(`${s}\n`);
  // The command's words come first: `terrace orgs list --json`.
  const firstOption = argv.findIndex((a) => a.startsWith('-'));
  const words = firstOption < 0 ? argv : argv.slice(0, firstOption);
  const two = words.slice(0, 2).join(' ');
  const cmd = commands.find((c) => c.name === two) ?? commands.find((c) => c.name === words[0]);
  let json = argv.includes('--json');
  try {
    if (!cmd) {
      const group = words[0] && GROUPS[words[0]] ? words[0] : undefined;
      if (words.length === 0 || (group && words.length === 1) || words[0] === 'help') {
        const target = words[0] === 'help' ? words.slice(1).join(' ') : undefined;
        const named = target ? commands.find((c) => c.name === target) : undefined;
        if (named) out(helpFor(named));
        else out(overview(commands, group ?? (target && GROUPS[target] ? target : undefined)));
        const asked = argv.includes('--help') || argv.includes('-h') || words[0] === 'help';
        return asked ? EXIT.ok : EXIT.usage;
      }
      throw usageError(`unknown command "${words.slice(0, group ? 2 : 1).join(' ')}"`, `run \`terrace ${group ?? ''}${group ? ' ' : ''}--help\` for the list`);
    }
    const rest = argv.slice(cmd.name.split(' ').length);
    let parsed: Parsed;
    try {
      const r = parseArgs({ args: rest, options: optionsOf(cmd) as never, allowPositionals: true, strict: true });
      parsed = { positionals: r.positionals, values: r.values as Parsed['values'] };
    } catch (e) {
      throw usageError((e as Error).message.replace(/\. To specify a positional.*$/s, ''), `run \`terrace ${cmd.name} --help\``);
    }
    json = parsed.values.json === true;
    if (parsed.values.help) {
      out(helpFor(cmd));
      return EXIT.ok;
    }
    const n = parsed.positionals.length;
    if (n < (cmd.minArgs ?? 0) || n > (cmd.maxArgs ?? 0)) {
      throw usageError(
        n < (cmd.minArgs ?? 0) ? `missing argument: terrace ${cmd.name} ${cmd.args ?? ''}` : `unexpected argument "${parsed.positionals[cmd.maxArgs ?? 0]}"`,
        `run \`terrace ${cmd.name} --help\``,
      );
    }
    let api: Promise<Api> | undefined;
    const ctx: Ctx = {
      env,
      json,
      stdout: io.stdout,
      stderr: io.stderr,
      stdin: io.stdin,
      out,
      err,
      api: () => (api ??= connect(env, typeof parsed.values.host === 'string' ? parsed.values.host : undefined, err)),
      emit(value, human) {
        if (json) out(JSON.stringify(value, null, 2));
        else human();
      },
    };
    return (await cmd.run(ctx, parsed)) ?? EXIT.ok;
  } catch (e) {
    const ce = e instanceof CliError ? e : new CliError(`unexpected failure: ${(e as Error)?.stack ?? String(e)}`, EXIT.failed);
    if (json) out(JSON.stringify({ error: { message: ce.message, hint: ce.hint ?? null, 'exit-code': ce.exitCode } }, null, 2));
    err(`error: ${ce.message}`);
    if (ce.hint) err(`hint: ${ce.hint}`);
    return ce.exitCode;
  }
}
