// Seeds a Terrace data directory with a realistic registry, straight into the store (no HTTP):
// organizations × modules × published versions (with inspected contents and one blob each, hard
// links to a few real tarballs), download counters, and an ordinary user who is a member of some
// organizations.
//
//   npx tsx bench/seed.ts [--dir <data dir>] [--orgs 100] [--modules-per-org 100] [--versions 10]
//
// The server is not running while this writes; start it on the directory afterwards.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { sql } from 'kysely';
import * as tar from 'tar';
import { openSqlite, type Db } from '../src/db/index.js';
import { isPostgres } from '../src/db/dialect.js';
import { openPostgres } from '../src/db/postgres.js';
import { createLogger } from '../src/logger.js';
import type { RegistryModulesTable, RegistryModuleVersionsTable } from '../src/db/schema.js';
import { hashToken } from '../src/identity/tokens.js';
import type { ModuleContents, ModuleInfo } from '../src/registry/inspect/model.js';
import { moduleArchiveKey } from '../src/blobs/layout.js';
import { refreshModuleCache } from '../src/registry/store.js';
import { READER_TOKEN, REPO_ROOT, log, parseFlags } from './common.js';

export interface SeedOptions {
  orgs: number;
  modulesPerOrg: number;
  versionsPerModule: number;
  /** How many organizations the reader user is an active member of. */
  readerOrgs: number;
}

export interface SeededModule {
  namespace: string;
  name: string;
  provider: string;
}

/** Written as seed.json beside the database: what the load generators address. */
export interface SeedManifest {
  format: 1;
  options: SeedOptions;
  modules: SeededModule[];
  versions: string[];
  readerNamespaces: string[];
  searchTerms: string[];
  seconds: number;
}

export const DEFAULT_SEED: SeedOptions = { orgs: 100, modulesPerOrg: 100, versionsPerModule: 10, readerOrgs: 10 };

const SEED_MANIFEST = 'seed.json';
const DB_FILE = 'terrace.db';
/** The real tarballs every blob is a hard link to (outside the blob root, so never an orphan). */
const TARBALLS_DIR = 'seed-tarballs';

/** Deterministic PRNG (mulberry32) so every seed of the same size is the same registry. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMPANIES = ['acme', 'globex', 'initech', 'umbrella', 'stark', 'wayne', 'tyrell', 'cyberdyne', 'soylent', 'hooli', 'vandelay', 'wonka'];
const TEAMS = ['platform', 'payments', 'data', 'security', 'network', 'edge', 'identity', 'ml', 'observability', 'core', 'mobile', 'search'];

const PROVIDERS: Record<string, string> = {
  aws: 'AWS',
  azurerm: 'Azure',
  google: 'Google Cloud',
  kubernetes: 'Kubernetes',
  helm: 'Helm',
  vault: 'Vault',
  cloudflare: 'Cloudflare',
  datadog: 'Datadog',
  github: 'GitHub',
  postgresql: 'PostgreSQL',
  tls: 'TLS',
  random: 'random',
};

/** [name, what it creates] — the description reads "... which creates <what> on <provider>". */
const COMPONENTS: [string, string][] = [
  ['vpc', 'a VPC with public and private subnets, NAT gateways and flow logs'],
  ['network', 'a hub-and-spoke network with peering and route tables'],
  ['subnets', 'subnets across availability zones with tagged route tables'],
  ['eks-cluster', 'a managed Kubernetes cluster with node groups and IRSA'],
  ['gke-cluster', 'a private regional Kubernetes cluster with workload identity'],
  ['aks-cluster', 'a Kubernetes cluster with autoscaling node pools'],
  ['node-pool', 'an autoscaling node pool with taints and labels'],
  ['s3-bucket', 'an encrypted object storage bucket with lifecycle rules and replication'],
  ['storage-account', 'a storage account with private endpoints and soft delete'],
  ['rds-postgres', 'a highly available PostgreSQL database with backups and monitoring'],
  ['mysql', 'a MySQL database with read replicas'],
  ['redis', 'a Redis cache cluster with encryption in transit'],
  ['dns-zone', 'a DNS zone with DNSSEC and delegated records'],
  ['dns-records', 'DNS records from a simple map'],
  ['load-balancer', 'an application load balancer with TLS listeners and WAF'],
  ['cdn', 'a CDN distribution with origin shield and cache policies'],
  ['iam-role', 'an IAM role with a least-privilege policy and trust relationships'],
  ['iam-policy', 'reusable IAM policy documents'],
  ['service-account', 'a service account with scoped permissions and key rotation'],
  ['kms-key', 'a customer-managed encryption key with rotation'],
  ['secrets', 'secrets with versioning and access policies'],
  ['monitoring', 'dashboards, monitors and alert routing for a service'],
  ['alerts', 'alerting rules with escalation policies'],
  ['logging', 'central log sinks, retention and export'],
  ['ingress-nginx', 'an NGINX ingress controller with autoscaling'],
  ['cert-manager', 'cert-manager with ACME issuers'],
  ['external-dns', 'external-dns with scoped credentials'],
  ['namespace', 'a namespace with quotas, limit ranges and network policies'],
  ['queue', 'a message queue with a dead-letter queue'],
  ['pubsub', 'topics and subscriptions with retry policies'],
  ['lambda-function', 'a serverless function with logging and alarms'],
  ['api-gateway', 'an API gateway with custom domains and throttling'],
  ['firewall', 'firewall rules and security groups from a declarative map'],
  ['bastion', 'a hardened bastion host with session logging'],
  ['vpn', 'a site-to-site VPN with BGP'],
  ['repository', 'repositories with branch protection and team access'],
  ['team', 'teams, memberships and repository permissions'],
  ['pki', 'a PKI secrets engine with an intermediate CA'],
  ['auth-backend', 'auth methods with roles bound to groups'],
  ['static-site', 'a static website with TLS and a CDN in front'],
];

/** Searched terms: common ones match hundreds of modules, rare ones a few, one matches none. */
export const SEARCH_TERMS = ['vpc', 'cluster', 'bucket', 'postgres', 'dns', 'monitoring', 'aws', 'kubernetes', 'acme', 'iam', 'cdn', 'bastion', 'hsm-appliance'];

/** Ten published versions per module by default: patch, minor and major releases and a pre-release. */
const VERSION_TRAIN = ['0.1.0', '0.2.0', '0.2.1', '0.3.0', '1.0.0', '1.0.1', '1.1.0', '1.2.0', '2.0.0-rc.1', '2.0.0', '2.1.0', '2.1.1', '2.2.0', '3.0.0'];

function versionsFor(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    out.push(i < VERSION_TRAIN.length ? VERSION_TRAIN[i]! : `4.${i - VERSION_TRAIN.length}.0`);
  }
  return out;
}

function seedId(prefix: string, n: number, rnd: () => number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 10; i++) s += alphabet[Math.floor(rnd() * 62)];
  return `${prefix}-${s}${n.toString(36).padStart(6, '0')}`;
}

const INPUT_POOL: [string, string, string][] = [
  ['name', 'string', 'Name prefix for every resource this module creates.'],
  ['tags', 'map(string)', 'Tags added to every resource.'],
  ['environment', 'string', 'Deployment environment (dev, staging, prod).'],
  ['region', 'string', 'Region to create the resources in.'],
  ['enabled', 'bool', 'Set to false to create nothing.'],
  ['cidr_block', 'string', 'The IPv4 CIDR block of the network.'],
  ['instance_type', 'string', 'Instance type of the nodes.'],
  ['min_size', 'number', 'Minimum number of nodes.'],
  ['max_size', 'number', 'Maximum number of nodes.'],
  ['kms_key_id', 'string', 'Encryption key; a new one is created when empty.'],
  ['retention_days', 'number', 'How long logs and backups are kept.'],
  ['allowed_cidrs', 'list(string)', 'Networks allowed to connect.'],
  ['domain_name', 'string', 'The DNS name clients use.'],
  ['deletion_protection', 'bool', 'Protect the resources from accidental deletion.'],
];
const OUTPUT_POOL = ['id', 'arn', 'name', 'endpoint', 'security_group_id', 'role_arn', 'url', 'zone_id'];

function moduleInfo(path: string, component: string, provider: string, description: string, rnd: () => number, providerVersion: string): ModuleInfo {
  const inputs = INPUT_POOL.filter(() => rnd() < 0.55).map(([name, type, desc]) => {
    const required = name === 'name' || rnd() < 0.2;
    return { name, type, description: desc, default: required ? '' : type === 'bool' ? 'true' : type === 'number' ? '3' : type.startsWith('map') ? '{}' : type.startsWith('list') ? '[]' : '""', required, sensitive: false };
  });
  const outputs = OUTPUT_POOL.filter(() => rnd() < 0.5).map((name) => ({ name, description: `The ${name.replace(/_/g, ' ')} of the ${component.replace(/-/g, ' ')}.`, sensitive: false }));
  const resourceType = `${provider}_${component.replace(/-/g, '_')}`;
  return {
    path,
    readme: path === '' ? `# ${component}\n\n${description}\n\n## Usage\n\n\`\`\`hcl\nmodule "${component}" {\n  source = "…/${component}/${provider}"\n  name   = "example"\n}\n\`\`\`\n` : '',
    empty: false,
    inputs,
    outputs,
    provider_dependencies: [{ name: provider, namespace: 'hashicorp', source: `hashicorp/${provider}`, version: providerVersion }],
    dependencies: [],
    resources: [{ name: 'this', type: resourceType }, ...(rnd() < 0.5 ? [{ name: 'logs', type: `${provider}_log_group` }] : [])],
  };
}

/** What inspection would have recorded: a root module, sometimes submodules, one example. */
function contentsFor(component: string, provider: string, description: string, version: string, rnd: () => number): ModuleContents {
  const major = Number(version.split('.')[0]);
  const providerVersion = major >= 2 ? '>= 5.0' : major === 1 ? '>= 4.40' : '>= 4.0';
  const submodules = rnd() < 0.3 ? ['modules/iam', 'modules/monitoring'].slice(0, 1 + Math.floor(rnd() * 2)) : [];
  return {
    root: moduleInfo('', component, provider, description, rnd, providerVersion),
    submodules: submodules.map((p) => moduleInfo(p, component, provider, description, rnd, providerVersion)),
    examples: [{ ...moduleInfo('examples/complete', component, provider, description, rnd, providerVersion), inputs: [], outputs: [] }],
  };
}

/** A real gzip'd tar of a small module, written to `file`; returns its size and sha256. */
async function writeModuleTarball(file: string, variant: number): Promise<{ size: number; sha256: string }> {
  const src = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bench-mod-'));
  try {
    const files: Record<string, string> = {
      'main.tf': `resource "random_id" "this" {\n  byte_length = var.length\n}\n# variant ${variant}\n`,
      'variables.tf': 'variable "length" {\n  type    = number\n  default = 8\n}\n',
      'outputs.tf': 'output "id" {\n  value = random_id.this.hex\n}\n',
      'README.md': `# Benchmark module ${variant}\n\nA small module used by the Terrace benchmark seed.\n`,
    };
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(src, name), content);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    await pipeline(tar.create({ cwd: src, portable: true }, Object.keys(files)), zlib.createGzip(), fs.createWriteStream(file));
  } finally {
    fs.rmSync(src, { recursive: true, force: true });
  }
  const bytes = fs.readFileSync(file);
  return { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Seeds `dataDir`, which must not hold a database yet. Returns the manifest it also writes. */
export async function seedDataDir(dataDir: string, opts: SeedOptions = DEFAULT_SEED): Promise<SeedManifest> {
  const started = performance.now();
  fs.mkdirSync(dataDir, { recursive: true });
  if (fs.existsSync(path.join(dataDir, DB_FILE))) throw new Error(`${dataDir} already holds a database; seed an empty directory`);
  const store = openSqlite(path.join(dataDir, DB_FILE));
  try {
    await store.migrate();
    const manifest = await fillStore(store.db, dataDir, opts, { writeBlobs: true, started });
    fs.writeFileSync(path.join(dataDir, SEED_MANIFEST), JSON.stringify(manifest));
    return manifest;
  } finally {
    await store.close();
  }
}

/**
 * Seeds an empty PostgreSQL database at `url` with the same registry as the SQLite seed in
 * `seedDir` (the seeder is deterministic: the same ids, so the same blob keys), through the same
 * code. Blobs are not written again: the database's rows point at the SQLite seed's blob files,
 * which a run shares read-only. Returns the seconds it took.
 */
export async function seedPostgres(url: string, seedDir: string, opts: SeedOptions = DEFAULT_SEED): Promise<number> {
  const started = performance.now();
  const expected = readManifest(seedDir);
  if (!expected) throw new Error(`${seedDir} holds no complete seed`);
  const store = openPostgres({ url, poolSize: PG_SEED_CONCURRENCY + 1, tls: 'disable', caFile: undefined, statementTimeoutMs: 0, connectTimeoutMs: 10_000 }, createLogger('warn'));
  try {
    await store.migrate();
    const manifest = await fillStore(store.db, seedDir, opts, { writeBlobs: false, started });
    if (JSON.stringify(manifest.modules) !== JSON.stringify(expected.modules)) throw new Error('the PostgreSQL seed differs from the SQLite seed: is the seeder still deterministic?');
    // Every row must point at a blob of the shared seed: check a spread-out sample.
    const keys = await store.db.selectFrom('registry_module_versions').select('blob_key').orderBy('id').execute();
    for (let i = 0; i < keys.length; i += Math.max(1, Math.floor(keys.length / 500))) {
      const file = path.join(seedDir, 'blobs', ...keys[i]!.blob_key!.split('/'));
      if (!fs.existsSync(file)) throw new Error(`the PostgreSQL seed's blob ${keys[i]!.blob_key} is not in the SQLite seed (${file})`);
    }
    // A database in service has been vacuumed since its rows were written, and its dirty pages
    // written out: done now, so autovacuum (thresholds crossed by the bulk load) and the
    // checkpointer do not do it on the servers' core during the first measurements.
    const vacuumStarted = performance.now();
    await sql`vacuum (analyze)`.execute(store.db);
    await sql`checkpoint`.execute(store.db);
    log(`  PostgreSQL seed: vacuum and checkpoint in ${((performance.now() - vacuumStarted) / 1000).toFixed(1)} s`);
  } finally {
    await store.close();
  }
  return (performance.now() - started) / 1000;
}

/** Transactions the PostgreSQL seed runs at once where rows are independent (the cached documents). */
const PG_SEED_CONCURRENCY = 4;

/**
 * Writes the registry into a migrated, empty store. With writeBlobs, also writes the tarballs and
 * hard-links every version's blob under dataDir; without, reads the tarballs dataDir already holds.
 */
async function fillStore(db: Db, dataDir: string, opts: SeedOptions, how: { writeBlobs: boolean; started: number }): Promise<SeedManifest> {
  const started = how.started;
  const postgres = isPostgres(db);
  const stage = (what: string, since: number) => log(`  ${postgres ? 'PostgreSQL' : 'SQLite'} seed: ${what} in ${((performance.now() - since) / 1000).toFixed(1)} s`);
  const rnd = prng(0x7e77ace);
  const now = new Date();
  const iso = (msAgo: number) => new Date(now.getTime() - msAgo).toISOString();
  const DAY = 86_400_000;

  // Every version has its own blob at the key the service would give it, as in a real
  // registry (the orphan sweep lists them all). The files are hard links to a handful of real
  // tarballs kept outside the blob root, so 100,000 blobs cost no space and little time.
  const SHARED_TARBALLS = 8;
  const tarballs: { file: string; size: number; sha256: string }[] = [];
  for (let i = 0; i < SHARED_TARBALLS; i++) {
    const file = path.join(dataDir, TARBALLS_DIR, `module-${i}.tar.gz`);
    tarballs.push({ file, ...(how.writeBlobs ? await writeModuleTarball(file, i) : hashFile(file)) });
  }
  const madeDirs = new Set<string>();
  const linkBlob = (key: string, source: string) => {
    if (!how.writeBlobs) return;
    const target = path.join(dataDir, 'blobs', ...key.split('/'));
    const dir = path.dirname(target);
    if (!madeDirs.has(dir)) {
      fs.mkdirSync(dir, { recursive: true });
      madeDirs.add(dir);
    }
    fs.linkSync(source, target);
  };

  // Organizations: company-team pairs, unique by construction.
  const orgRows: { id: string; name: string; name_lower: string; email: string; attributes: string; created_at: string }[] = [];
  for (let i = 0; i < opts.orgs; i++) {
    const base = `${COMPANIES[i % COMPANIES.length]}-${TEAMS[Math.floor(i / COMPANIES.length) % TEAMS.length]}`;
    const round = Math.floor(i / (COMPANIES.length * TEAMS.length));
    const name = round === 0 ? base : `${base}-${round + 1}`;
    orgRows.push({ id: seedId('org', i, rnd), name, name_lower: name, email: `owners@${name}.example.com`, attributes: '{}', created_at: iso(400 * DAY) });
  }

  // Modules: per organization, distinct (component, provider) pairs, some with a suffix.
  const combos: [number, string][] = [];
  for (let c = 0; c < COMPONENTS.length; c++) for (const p of Object.keys(PROVIDERS)) combos.push([c, p]);
  const moduleRows: RegistryModulesTable[] = [];
  const moduleComponent = new Map<string, string>();
  const manifestModules: SeededModule[] = [];
  for (const org of orgRows) {
    const used = new Set<string>();
    while (used.size < opts.modulesPerOrg) {
      const [c, provider] = combos[Math.floor(rnd() * combos.length)]!;
      const [component, what] = COMPONENTS[c]!;
      const flavour = rnd();
      const name = flavour < 0.7 ? component : flavour < 0.85 ? `${component}-${org.name.split('-')[1]}` : `${component}-v2`;
      const key = `${name}/${provider}`;
      if (used.has(key)) {
        if (used.size >= combos.length * 3) throw new Error('modules-per-org is larger than the name space of the seeder');
        continue;
      }
      used.add(key);
      const id = seedId('mod', moduleRows.length, rnd);
      moduleComponent.set(id, component);
      moduleRows.push({
        id,
        organization_id: org.id,
        name,
        name_lower: name,
        provider,
        description: `Terraform module which creates ${what} on ${PROVIDERS[provider]}.`,
        versions_json: '[]',
        latest_version: null,
        created_at: iso(365 * DAY),
        updated_at: iso(365 * DAY),
      });
      manifestModules.push({ namespace: org.name, name, provider });
    }
  }

  const versions = versionsFor(opts.versionsPerModule);
  const chunk = <T>(rows: T[], size: number): T[][] => {
    const out: T[][] = [];
    for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
    return out;
  };

  await db.transaction().execute(async (tx) => {
    for (const rows of chunk(orgRows, 500)) await tx.insertInto('organizations').values(rows).execute();
    for (const rows of chunk(moduleRows, 500)) await tx.insertInto('registry_modules').values(rows).execute();
  });

  // Versions: 17 columns per row keeps a 500-row insert well under SQLite's variable limit. The
  // rows are made in order (the PRNG's sequence is the seed); on PostgreSQL several chunks are
  // written at once while the next are made.
  let versionCount = 0;
  const inFlight = new Set<Promise<void>>();
  const stageStarted = performance.now();
  for (const mods of chunk(moduleRows, 1000)) {
    const rows: RegistryModuleVersionsTable[] = [];
    for (const m of mods) {
      versions.forEach((version, i) => {
        const tarball = tarballs[(versionCount + i) % tarballs.length]!;
        const published = iso((versions.length - i) * 20 * DAY + Math.floor(rnd() * DAY));
        const id = seedId('modver', versionCount + i, rnd);
        const blobKey = moduleArchiveKey(m.organization_id, m.id, id);
        linkBlob(blobKey, tarball.file);
        rows.push({
          id,
          module_id: m.id,
          version,
          status: 'ok',
          error: null,
          description: null,
          commit_sha: null,
          blob_key: blobKey,
          size: tarball.size,
          sha256: tarball.sha256,
          upload_token_hash: null,
          upload_expires_at: null,
          upload_lease_until: null,
          created_at: published,
          updated_at: published,
          published_at: published,
          contents: JSON.stringify(contentsFor(moduleComponent.get(m.id)!, m.provider, m.description, version, rnd)),
          warnings: '[]',
        });
      });
      versionCount += versions.length;
    }
    const write = db.transaction().execute(async (tx) => {
      for (const part of chunk(rows, 500)) await tx.insertInto('registry_module_versions').values(part).execute();
    });
    const tracked: Promise<void> = write.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= (postgres ? PG_SEED_CONCURRENCY : 1)) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  stage('versions', stageStarted);

  // The cached /versions document, latest version and search entry, rendered by the store's
  // own code. Planner statistics keep SQLite on the (module_id, version) index for the 'ok'
  // versions of each module while the table is being filled (without them it once preferred a
  // status index and visited every version per module); they are removed afterwards so the
  // server sees a database like any other, which never runs ANALYZE.
  // On PostgreSQL the modules' documents are independent rows: several transactions at once.
  await sql`analyze`.execute(db);
  const refreshChunks = chunk(moduleRows, postgres ? 250 : 1000);
  const refreshStream = async (chunks: RegistryModulesTable[][]) => {
    for (const mods of chunks) {
      await db.transaction().execute(async (tx) => {
        for (const m of mods) await refreshModuleCache(tx, m.id, m.updated_at);
      });
    }
  };
  const streams = postgres ? PG_SEED_CONCURRENCY : 1;
  const refreshStarted = performance.now();
  await Promise.all(Array.from({ length: streams }, (_, k) => refreshStream(refreshChunks.filter((_, i) => i % streams === k))));
  stage('cached documents', refreshStarted);
  if (postgres) {
    // A PostgreSQL server keeps statistics (autovacuum gathers them soon after a bulk load):
    // gather them now, so the server meets the tables as it would in service.
    await sql`analyze`.execute(db);
  } else {
    // stat4 too where SQLite was built with it (better-sqlite3 is): empty tables mean no statistics.
    const statTables = await sql<{ name: string }>`select name from sqlite_master where name like 'sqlite_stat%'`.execute(db);
    for (const { name } of statTables.rows) await sql`delete from ${sql.table(name)}`.execute(db);
  }

  // Download counters: every module some, a popular tenth daily for a month.
  const downloadRows: { module_id: string; day: string; count: number }[] = [];
  moduleRows.forEach((m, i) => {
    const days = i % 10 === 0 ? 30 : 1 + (i % 3);
    for (let d = 0; d < days; d++) {
      downloadRows.push({ module_id: m.id, day: iso(d * DAY).slice(0, 10), count: 1 + Math.floor(rnd() * (i % 10 === 0 ? 500 : 20)) });
    }
  });
  await db.transaction().execute(async (tx) => {
    for (const rows of chunk(downloadRows, 1000)) await tx.insertInto('registry_module_downloads').values(rows).execute();
  });

  // An ordinary (non-admin) user, active member of the first readerOrgs organizations.
  const readerOrgs = orgRows.slice(0, Math.min(opts.readerOrgs, orgRows.length));
  await db.transaction().execute(async (tx) => {
    const userId = seedId('user', 0, rnd);
    const created = iso(30 * DAY);
    await tx
      .insertInto('users')
      .values({ id: userId, username: 'bench-reader', username_lower: 'bench-reader', email: 'reader@bench.example.com', email_lower: 'reader@bench.example.com', is_site_admin: 0, is_service_account: 0, created_at: created })
      .execute();
    await tx
      .insertInto('tokens')
      .values({ id: seedId('at', 0, rnd), kind: 'user', user_id: userId, team_id: null, organization_id: null, description: 'benchmark reader', token_hash: hashToken(READER_TOKEN), created_by: null, created_at: created, last_used_at: null, expired_at: null })
      .execute();
    for (const [i, org] of readerOrgs.entries()) {
      const teamId = seedId('team', i, rnd);
      await tx.insertInto('teams').values({ id: teamId, organization_id: org.id, name: 'readers', name_lower: 'readers', is_owners: 0, visibility: 'secret', permissions: '{}', created_at: created }).execute();
      await tx.insertInto('team_members').values({ team_id: teamId, user_id: userId, created_at: created }).execute();
      await tx.insertInto('organization_memberships').values({ id: seedId('ou', i, rnd), organization_id: org.id, user_id: userId, status: 'active', created_at: created }).execute();
    }
  });

  const manifest: SeedManifest = {
    format: 1,
    options: opts,
    modules: manifestModules,
    versions,
    readerNamespaces: readerOrgs.map((o) => o.name),
    searchTerms: SEARCH_TERMS,
    seconds: (performance.now() - started) / 1000,
  };
  return manifest;
}

function hashFile(file: string): { size: number; sha256: string } {
  const bytes = fs.readFileSync(file);
  return { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

export function readManifest(dataDir: string): SeedManifest | null {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(dataDir, SEED_MANIFEST), 'utf8')) as SeedManifest;
    return m.format === 1 ? m : null;
  } catch {
    return null;
  }
}

const SEED_PREFIX = 'terrace-bench-seed-';

/**
 * What the seed's contents depend on: the migrations that built its schema (an edited migration
 * is not re-run on an existing database), the store code that rendered its caches, and this
 * seeder. A change to any of them means a fresh seed.
 */
function seedFingerprint(): string {
  const hash = createHash('sha256');
  const files = [
    ...fs.readdirSync(path.join(REPO_ROOT, 'migrations')).sort().map((f) => path.join(REPO_ROOT, 'migrations', f)),
    path.join(REPO_ROOT, 'src/registry/store.ts'),
    fileURLToPath(import.meta.url),
  ];
  for (const file of files) hash.update(path.relative(REPO_ROOT, file)).update(fs.readFileSync(file));
  return hash.digest('hex').slice(0, 12);
}

/** Where a seed of this size and fingerprint is cached between runs. */
export function cachedSeedDir(opts: SeedOptions): string {
  return path.join(os.tmpdir(), `${SEED_PREFIX}${opts.orgs}x${opts.modulesPerOrg}x${opts.versionsPerModule}-${seedFingerprint()}`);
}

/** Reuses the cached seed when it is complete (its manifest is written last), else re-seeds it. */
export async function ensureSeed(opts: SeedOptions, reseed = false): Promise<{ dir: string; manifest: SeedManifest; reused: boolean }> {
  const dir = cachedSeedDir(opts);
  const existing = reseed ? null : readManifest(dir);
  if (existing && JSON.stringify(existing.options) === JSON.stringify(opts)) return { dir, manifest: existing, reused: true };
  // One cached seed at a time: older ones (another size, schema or seeder) are of no further use.
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (name.startsWith(SEED_PREFIX)) fs.rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true });
  }
  const manifest = await seedDataDir(dir, opts);
  return { dir, manifest, reused: false };
}

/**
 * A private copy of the seed's database for one run, so a run's writes never leak into the next.
 * The blob directory is shared through a symlink: the benchmark only reads blobs, and copying
 * 100,000 files would take longer than the run.
 */
export function copySeed(seedDir: string, runDir: string): void {
  fs.rmSync(runDir, { recursive: true, force: true });
  fs.mkdirSync(runDir, { recursive: true });
  for (const name of fs.readdirSync(seedDir)) {
    if (name === 'blobs') fs.symlinkSync(path.join(seedDir, 'blobs'), path.join(runDir, 'blobs'), 'dir');
    else fs.cpSync(path.join(seedDir, name), path.join(runDir, name), { recursive: true });
  }
}

/**
 * A data directory that only shares the seed's blobs (symlinked), for instances whose database is
 * elsewhere (PostgreSQL seeded from the same rows): several instances may share it.
 */
export function shareSeedBlobs(seedDir: string, dataDir: string): void {
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.mkdirSync(dataDir, { recursive: true });
  fs.symlinkSync(path.join(seedDir, 'blobs'), path.join(dataDir, 'blobs'), 'dir');
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), { dir: 'string', orgs: 'string', 'modules-per-org': 'string', versions: 'string', 'reader-orgs': 'string' });
  const opts: SeedOptions = {
    orgs: Number(flags.orgs ?? DEFAULT_SEED.orgs),
    modulesPerOrg: Number(flags['modules-per-org'] ?? DEFAULT_SEED.modulesPerOrg),
    versionsPerModule: Number(flags.versions ?? DEFAULT_SEED.versionsPerModule),
    readerOrgs: Number(flags['reader-orgs'] ?? DEFAULT_SEED.readerOrgs),
  };
  const dir = typeof flags.dir === 'string' ? path.resolve(flags.dir) : cachedSeedDir(opts);
  if (typeof flags.dir !== 'string') fs.rmSync(dir, { recursive: true, force: true });
  log(`seeding ${opts.orgs} organizations × ${opts.modulesPerOrg} modules × ${opts.versionsPerModule} versions into ${dir}`);
  const m = await seedDataDir(dir, opts);
  log(`seeded ${m.modules.length} modules, ${m.modules.length * m.versions.length} versions in ${m.seconds.toFixed(1)} s`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
