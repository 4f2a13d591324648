// Where Terraform keeps credentials and host overrides, read the way Terraform reads them, so one
// `terraform login` or `terrace login` serves both tools.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { domainToASCII } from 'node:url';
import { CliError, EXIT } from './errors.js';
import { HclSyntaxError, parseHcl, toObject, type HclValue } from './hcl.js';

export type Env = Record<string, string | undefined>;

export interface CliConfig {
  /** Tokens from `credentials` blocks and *.tfrc.json files, by comparison host name. */
  credentials: Map<string, { token: string; file: string }>;
  /** `host` blocks: service discovery overrides, by comparison host name. */
  hosts: Map<string, Record<string, unknown>>;
  /** Things Terraform would warn about too. */
  warnings: string[];
}

const homeDir = (env: Env) => env.HOME || os.homedir();

/** Terraform's configuration directory: ~/.terraform.d on Unix, %APPDATA%/terraform.d on Windows. */
export function configDir(env: Env): string {
  if (process.platform === 'win32' && env.APPDATA) return path.join(env.APPDATA, 'terraform.d');
  return path.join(homeDir(env), '.terraform.d');
}

export const credentialsFile = (env: Env) => path.join(configDir(env), 'credentials.tfrc.json');

/**
 * A host name in Terraform's comparison form: lower case, internationalised names in punycode,
 * the default HTTPS port dropped. Returns null for something that is not a host name.
 */
export function comparisonHost(raw: string): string | null {
  const m = /^([^:/\s]+)(?::(\d{1,5}))?$/.exec(raw.trim());
  if (!m) return null;
  const ascii = domainToASCII(m[1]!.toLowerCase());
  if (!ascii) return null;
  return m[2] && m[2] !== '443' ? `${ascii}:${m[2]}` : ascii;
}

/** The TF_TOKEN_<host> variables, decoded as Terraform decodes them ("__" is "-", "_" is "."). */
export function tokensFromEnv(env: Env): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('TF_TOKEN_') || value === undefined) continue;
    const host = comparisonHost(name.slice('TF_TOKEN_'.length).replaceAll('__', '-').replaceAll('_', '.'));
    if (host) out.set(host, value);
  }
  return out;
}

function readConfigFile(file: string, into: CliConfig): void {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new CliError(`cannot read the Terraform CLI configuration ${file}: ${(err as Error).message}`);
  }
  let doc: Record<string, HclValue>;
  try {
    if (file.endsWith('.json')) {
      doc = text.trim() === '' ? {} : (JSON.parse(text) as Record<string, HclValue>);
    } else {
      // HCL repeats blocks; fold them into the same shape the JSON form has.
      doc = { credentials: {}, host: {} };
      for (const item of parseHcl(text)) {
        if ((item.key === 'credentials' || item.key === 'host') && item.body && item.labels[0]) {
          (doc[item.key] as Record<string, HclValue>)[item.labels[0]] = toObject(item.body);
        }
      }
    }
  } catch (err) {
    const why = err instanceof HclSyntaxError || err instanceof SyntaxError ? err.message : String(err);
    throw new CliError(`the Terraform CLI configuration ${file} is not valid: ${why}`, EXIT.usage, 'fix the file, or point TF_CLI_CONFIG_FILE at another one');
  }
  const section = (k: string) => (doc && typeof doc[k] === 'object' && doc[k] !== null && !Array.isArray(doc[k]) ? (doc[k] as Record<string, HclValue>) : {});
  for (const [host, v] of Object.entries(section('credentials'))) {
    const key = comparisonHost(host);
    const token = (v as Record<string, HclValue> | null)?.token;
    if (key && typeof token === 'string') into.credentials.set(key, { token, file });
  }
  for (const [host, v] of Object.entries(section('host'))) {
    const key = comparisonHost(host);
    const services = (v as Record<string, HclValue> | null)?.services;
    if (!key || typeof services !== 'object' || services === null || Array.isArray(services)) continue;
    // Values are URLs, or objects for services such as login.v1.
    const s: Record<string, unknown> = {};
    for (const [id, v] of Object.entries(services)) if (v !== null) s[id] = v;
    into.hosts.set(key, s);
  }
}

/**
 * Loads the CLI configuration as Terraform does: TF_CLI_CONFIG_FILE (or TERRAFORM_CONFIG), else
 * ~/.terraformrc; then, unless the file was overridden, every *.tfrc and *.tfrc.json in the
 * configuration directory in name order, later files winning.
 */
export function loadCliConfig(env: Env): CliConfig {
  const config: CliConfig = { credentials: new Map(), hosts: new Map(), warnings: [] };
  const override = env.TF_CLI_CONFIG_FILE || env.TERRAFORM_CONFIG;
  if (override && !fs.existsSync(override)) {
    // Terraform warns and goes on without it (and still skips the configuration directory).
    config.warnings.push(`the CLI configuration file ${override} (TF_CLI_CONFIG_FILE) does not exist`);
  }
  readConfigFile(override || path.join(homeDir(env), process.platform === 'win32' ? 'terraform.rc' : '.terraformrc'), config);
  if (!override) {
    const dir = configDir(env);
    let names: string[] = [];
    try {
      names = fs.readdirSync(dir).sort();
    } catch {
      // no configuration directory: nothing to read
    }
    for (const name of names) if (name.endsWith('.tfrc') || name.endsWith('.tfrc.json')) readConfigFile(path.join(dir, name), config);
  }
  return config;
}

export interface FoundToken { token: string; source: string }

/** A token for the host: TF_TOKEN_<host> first, then the CLI configuration, as Terraform looks. */
export function findToken(env: Env, config: CliConfig, host: string): FoundToken | undefined {
  const key = comparisonHost(host) ?? host;
  const fromEnv = tokensFromEnv(env).get(key);
  if (fromEnv !== undefined) return { token: fromEnv, source: `the TF_TOKEN_ environment variable for ${key}` };
  const c = config.credentials.get(key);
  return c ? { token: c.token, source: c.file } : undefined;
}

/** The environment variable name Terraform reads for a host (null when a port makes it inexpressible). */
export function envVarFor(host: string): string | null {
  return host.includes(':') ? null : `TF_TOKEN_${host.replaceAll('-', '__').replaceAll('.', '_')}`;
}

/**
 * Writes (or with token null removes) the host's entry in credentials.tfrc.json, keeping every
 * other entry, atomically and readable only by the user, as `terraform login` does.
 */
export function storeCredentials(env: Env, config: CliConfig, host: string, token: string | null): string {
  const key = comparisonHost(host) ?? host;
  const file = credentialsFile(env);
  const elsewhere = config.credentials.get(key);
  if (elsewhere && path.resolve(elsewhere.file) !== path.resolve(file)) {
    throw new CliError(
      `credentials for ${key} are set in ${elsewhere.file}, which Terrace (like Terraform) does not edit`,
      EXIT.failed,
      `remove the credentials "${key}" block from that file, or change the token there`,
    );
  }
  let doc: Record<string, unknown> = {};
  try {
    const text = fs.readFileSync(file, 'utf8');
    if (text.trim()) doc = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const creds = (typeof doc.credentials === 'object' && doc.credentials !== null ? doc.credentials : {}) as Record<string, unknown>;
  for (const k of Object.keys(creds)) if (comparisonHost(k) === key) delete creds[k];
  if (token !== null) creds[key] = { token };
  doc.credentials = creds;
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return file;
}
