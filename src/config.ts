import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_KEY_ID, KEY_ID_PATTERN, type ServerKey } from './secrets.js';

/**
 * Every setting Terrace reads, typed. The README's configuration table mirrors SETTINGS below:
 * keep them in step.
 */
/** PostgreSQL, when TERRACE_DATABASE_URL selects it (else the embedded SQLite file). */
export interface DatabaseConfig {
  /** postgres://user:password@host:port/database: a secret (it holds the password); never log it. */
  url: string;
  poolSize: number;
  tls: 'disable' | 'require' | 'verify-full';
  /** CA bundle (PEM) that verify-full checks the server's certificate against; else the system's. */
  caFile: string | undefined;
  /** Server-side limit on one statement; 0 turns it off. */
  statementTimeoutMs: number;
  connectTimeoutMs: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  publicUrl: string;
  adminToken: string | undefined;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  secretKey: string | undefined;
  /** undefined: the SQLite file in the data directory. */
  database: DatabaseConfig | undefined;
  /** TERRACE_ENCRYPTION_KEYS, in order: the first is current, every one decrypts. */
  encryptionKeys: ServerKey[];
  /** Blobs or secrets the upkeep handles per transaction. */
  encryptionBatchSize: number;
  /** Pause between the upkeep's batches, so a large migration does not hog the disk and database. */
  encryptionBatchPauseMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Which entitlement set every organization gets (src/organizations/entitlements.ts). */
  edition: 'free' | 'standard' | 'premium';
  maxJsonBodyBytes: number;
  maxArchiveBytes: number;
  maxArchiveEntries: number;
  maxArchiveUnpackedBytes: number;
  /** Decompression-bomb bound: unpacked at most this many times the compressed size (0: off)… */
  maxArchiveRatio: number;
  /** …except below this many unpacked bytes, where the ratio is not applied. */
  archiveRatioFloorBytes: number;
  inspectTimeoutMs: number;
  inspectMaxHeapMb: number;
  archiveUrlTtlSeconds: number;
  uploadUrlTtlSeconds: number;
  /** How long a module upload's PUT waits for its ingestion before answering 202 (ms). */
  ingestWaitMs: number;
  /** How often this process writes the module downloads it counted in memory (ms): what a crash can lose. */
  downloadFlushMs: number;
  /** How often the registry upkeep gives back dead uploads' URLs and removes orphaned archives. */
  registryUpkeepIntervalSeconds: number;
  /** An unreferenced module archive is removed only once it is older than this (uploads in flight). */
  orphanBlobGraceSeconds: number;
  publicRead: boolean;
  blobDriver: 'fs' | 's3';
  s3: {
    bucket: string | undefined;
    region: string;
    endpoint: string | undefined;
    prefix: string;
    accessKeyId: string | undefined;
    secretAccessKey: string | undefined;
    forcePathStyle: boolean;
    checksumWhenRequired: boolean;
    proxyDownloads: boolean;
  };
  shutdownTimeoutMs: number;
  /** Connection limits and timeouts of the listener (HTTP and HTTPS alike). */
  http: {
    /** Longest wait for a request's headers once its connection has sent its first byte. */
    headersTimeoutMs: number;
    /** A request whose body sends no byte for this long is closed. Moving uploads are never cut. */
    bodyIdleTimeoutMs: number;
    /** Longest time to receive a whole request (headers and body); 0 turns it off. Upload URLs are exempt. */
    requestTimeoutMs: number;
    /** How long an idle keep-alive connection stays open. */
    keepAliveTimeoutMs: number;
    /** Open connections beyond this are closed as they arrive. */
    maxConnections: number;
  };
  /** Installation default data retention (delete data older than N days); undefined = none. */
  dataRetentionDays: number | undefined;
  /** How often the data retention sweep runs. */
  retentionSweepIntervalSeconds: number;
  /** Records (state versions, …) the sweep removes per transaction. */
  retentionBatchSize: number;
  /** How long a job's claim holds before another runner may take over from a crashed holder. */
  jobLeaseSeconds: number;
  /** Longest wait between job polls while nothing is due (ms). */
  jobIdlePollMs: number;
  /** How often this instance reads the cache generations other instances bump: the bound on how stale its caches can be. */
  cacheSyncMs: number;
  /** Entries each in-memory cache (tokens, modules, search pages) holds at most; 0 turns the caches off. */
  cacheMaxEntries: number;
  /** How old the download totals on a cached list or search page may grow before they are read again. */
  listCacheTtlMs: number;
  /** Run background jobs (state processing, upload expiry, retention sweeps) in this process. */
  jobsEnabled: boolean;
  /** Largest state file (and JSON state) accepted, decoded. */
  maxStateBytes: number;
  /** Largest configuration version (tar.gz) accepted at its upload URL. */
  maxConfigurationVersionBytes: number;
  /** Largest plan JSON an executor may hand over for a run. */
  maxPlanJsonBytes: number;
  /** Time limit of one outbound run task request (verification or delivery), in ms. */
  runTaskRequestTimeoutMs: number;
  /** Time limit of one call to a VCS provider's REST API (GitHub, GitLab), in ms. */
  vcsRequestTimeoutMs: number;
  /** Bound on every git call (listing tags, fetching a commit, archiving it). */
  gitTimeoutMs: number;
  /** Most bytes one shallow fetch may download into its temporary repository. */
  gitMaxFetchBytes: number;
  /** How often every tag-based VCS module's repository is rescanned for tags webhooks missed. */
  vcsRescanIntervalSeconds: number;
  /** How long a web UI session lasts from sign-in, in seconds (server-side expiry). */
  sessionTtlSeconds: number;
  /** How often expired web sessions and OAuth authorization codes are swept away. */
  webSweepIntervalSeconds: number;
  /** Whether TERRACE_PUBLIC_URL was set: pages then show its host, else the host the browser used. */
  publicUrlConfigured: boolean;
  /** OpenID Connect single sign-on for the web UI; undefined when not configured. */
  oidc: OidcConfig | undefined;
}

/** One TERRACE_OIDC_GROUP_TEAMS entry: members of group (a value of the groups claim) sit in organization/team. */
export interface GroupTeam {
  group: string;
  organization: string;
  team: string;
}

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string;
  /** The claim that lists the user's groups; with groupTeams, mapped teams follow it at every sign-in. */
  groupsClaim?: string;
  groupTeams?: GroupTeam[];
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = str(env, name);
  if (raw === undefined) return def;
  const v = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function oneOf<T extends string>(env: Env, name: string, def: T, allowed: readonly T[]): T {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function url(env: Env, name: string): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(name, `must use http or https, got "${parsed.protocol}"`);
  }
  if (parsed.search || parsed.hash || parsed.username || parsed.password) {
    throw new ConfigError(name, 'must not carry a query, fragment or credentials');
  }
  return parsed.toString().replace(/\/+$/, '');
}

const MiB = 1024 * 1024;

/**
 * TERRACE_OIDC_GROUP_TEAMS: entries separated by ";" or new lines, each group=organization/team.
 * The split is at the last "=" (no organization or team name has one), so group values that do
 * (LDAP distinguished names) can be mapped as they are.
 */
function groupTeams(raw: string): GroupTeam[] {
  const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9])?$/;
  const out: GroupTeam[] = [];
  raw.split(/[;\n]/).forEach((entry, i) => {
    const e = entry.trim();
    if (e === '') return;
    const eq = e.lastIndexOf('=');
    const group = eq > 0 ? e.slice(0, eq).trim() : '';
    const [organization, team, extra] = e.slice(eq + 1).trim().split('/');
    if (!group || !organization || !team || extra !== undefined || !NAME.test(organization) || !NAME.test(team)) {
      throw new ConfigError('TERRACE_OIDC_GROUP_TEAMS', `entry ${i + 1} ("${e}") must be group=organization/team, e.g. platform-engineers=acme/platform`);
    }
    out.push({ group, organization, team });
  });
  if (out.length === 0) throw new ConfigError('TERRACE_OIDC_GROUP_TEAMS', 'names no group=organization/team entry');
  return out;
}

/** "id:base64key,id:base64key": 32-byte keys, unique ids; the first is current. */
function encryptionKeys(env: Env): ServerKey[] {
  const name = 'TERRACE_ENCRYPTION_KEYS';
  const raw = str(env, name);
  if (raw === undefined) return [];
  const keys: ServerKey[] = [];
  for (const entry of raw.split(',').map((e) => e.trim())) {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? '' : entry.slice(0, colon);
    if (!KEY_ID_PATTERN.test(id)) {
      throw new ConfigError(name, 'must be a comma-separated list of id:base64key, each id 1-32 letters, digits, "-" or "_"');
    }
    if (id === DEFAULT_KEY_ID) throw new ConfigError(name, `the id "${DEFAULT_KEY_ID}" is reserved for TERRACE_SECRET_KEY (or secret.key): choose another`);
    if (keys.some((k) => k.id === id)) throw new ConfigError(name, `the id "${id}" is listed twice`);
    const b64 = entry.slice(colon + 1);
    const material = Buffer.from(b64, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || material.length !== 32) {
      throw new ConfigError(name, `the key "${id}" must be 32 random bytes in base64 (for example: openssl rand -base64 32)`);
    }
    keys.push({ id, material });
  }
  return keys;
}

function database(env: Env, cwd: string): DatabaseConfig | undefined {
  const name = 'TERRACE_DATABASE_URL';
  const raw = str(env, name);
  const tls = oneOf(env, 'TERRACE_DATABASE_TLS', 'disable', ['disable', 'require', 'verify-full'] as const);
  const caRaw = str(env, 'TERRACE_DATABASE_CA_FILE');
  if (raw === undefined) return undefined;
  // The URL holds a password: no message below repeats it.
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a URL like postgres://user:password@host:5432/database (percent-encode special characters in the password)');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new ConfigError(name, `must start with postgres:// or postgresql://, got "${parsed.protocol}//"; leave it unset for the embedded SQLite store`);
  }
  if (!parsed.hostname) throw new ConfigError(name, 'must name a host, as in postgres://user:password@host:5432/database');
  if (parsed.pathname.replace(/^\//, '') === '') throw new ConfigError(name, 'must name a database, as in postgres://user:password@host:5432/database');
  for (const key of parsed.searchParams.keys()) {
    if (/^ssl/.test(key)) throw new ConfigError(name, `must not carry "${key}": set TERRACE_DATABASE_TLS (and TERRACE_DATABASE_CA_FILE) instead`);
  }
  let caFile: string | undefined;
  if (caRaw !== undefined) {
    if (tls !== 'verify-full') throw new ConfigError('TERRACE_DATABASE_CA_FILE', 'is only used with TERRACE_DATABASE_TLS=verify-full');
    caFile = path.resolve(cwd, caRaw);
    try {
      fs.accessSync(caFile, fs.constants.R_OK);
    } catch {
      throw new ConfigError('TERRACE_DATABASE_CA_FILE', `cannot read "${caFile}": give the path of a PEM file with the CA certificates`);
    }
  }
  return {
    url: raw,
    poolSize: int(env, 'TERRACE_DATABASE_POOL_SIZE', 10, 2, 1000),
    tls,
    caFile,
    statementTimeoutMs: int(env, 'TERRACE_DATABASE_STATEMENT_TIMEOUT_MS', 30_000, 0, 3_600_000),
    connectTimeoutMs: int(env, 'TERRACE_DATABASE_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
  };
}

/** Reads and validates the environment. Throws ConfigError naming the variable on a bad value. */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): Config {
  const port = int(env, 'PORT', 8080, 0, 65535);
  const host = str(env, 'HOST') ?? '127.0.0.1';
  const tlsCert = str(env, 'TERRACE_TLS_CERT');
  const tlsKey = str(env, 'TERRACE_TLS_KEY');
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ConfigError(tlsCert ? 'TERRACE_TLS_KEY' : 'TERRACE_TLS_CERT', 'TERRACE_TLS_CERT and TERRACE_TLS_KEY must be set together');
  }
  const scheme = tlsCert ? 'https' : 'http';
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const publicUrl = url(env, 'TERRACE_PUBLIC_URL') ?? `${scheme}://${urlHost}:${port}`;

  const adminToken = str(env, 'TERRACE_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 24) {
    throw new ConfigError('TERRACE_ADMIN_TOKEN', 'must be at least 24 characters long');
  }
  const secretKey = str(env, 'TERRACE_SECRET_KEY');
  if (secretKey !== undefined && secretKey.length < 32) {
    throw new ConfigError('TERRACE_SECRET_KEY', 'must be at least 32 characters long');
  }

  const blobDriver = oneOf(env, 'TERRACE_BLOB_DRIVER', 'fs', ['fs', 's3'] as const);
  const bucket = str(env, 'TERRACE_S3_BUCKET');
  if (blobDriver === 's3' && !bucket) {
    throw new ConfigError('TERRACE_S3_BUCKET', 'is required when TERRACE_BLOB_DRIVER=s3');
  }

  const oidcIssuer = url(env, 'TERRACE_OIDC_ISSUER');
  const oidcClientId = str(env, 'TERRACE_OIDC_CLIENT_ID');
  const oidcClientSecret = str(env, 'TERRACE_OIDC_CLIENT_SECRET');
  if (oidcIssuer && (!oidcClientId || !oidcClientSecret)) {
    throw new ConfigError(oidcClientId ? 'TERRACE_OIDC_CLIENT_SECRET' : 'TERRACE_OIDC_CLIENT_ID', 'is required when TERRACE_OIDC_ISSUER is set');
  }
  const oidcScopes = str(env, 'TERRACE_OIDC_SCOPES') ?? 'openid email profile';
  if (oidcIssuer && !oidcScopes.split(/\s+/).includes('openid')) throw new ConfigError('TERRACE_OIDC_SCOPES', 'must include openid');
  const groupsClaim = str(env, 'TERRACE_OIDC_GROUPS_CLAIM');
  const groupTeamsRaw = str(env, 'TERRACE_OIDC_GROUP_TEAMS');
  if ((groupsClaim || groupTeamsRaw) && !oidcIssuer) {
    throw new ConfigError(groupsClaim ? 'TERRACE_OIDC_GROUPS_CLAIM' : 'TERRACE_OIDC_GROUP_TEAMS', 'needs single sign-on: set TERRACE_OIDC_ISSUER too');
  }
  if (groupsClaim && !groupTeamsRaw) throw new ConfigError('TERRACE_OIDC_GROUP_TEAMS', 'is required when TERRACE_OIDC_GROUPS_CLAIM is set: which group puts a user in which team');
  if (groupTeamsRaw && !groupsClaim) throw new ConfigError('TERRACE_OIDC_GROUPS_CLAIM', 'is required when TERRACE_OIDC_GROUP_TEAMS is set: the claim that lists the groups (often "groups")');
  const groupsMapping = groupsClaim && groupTeamsRaw ? { groupsClaim, groupTeams: groupTeams(groupTeamsRaw) } : {};

  return {
    port,
    host,
    dataDir: path.resolve(cwd, str(env, 'TERRACE_DATA_DIR') ?? 'storage'),
    publicUrl,
    adminToken,
    tlsCert,
    tlsKey,
    secretKey,
    database: database(env, cwd),
    encryptionKeys: encryptionKeys(env),
    encryptionBatchSize: int(env, 'TERRACE_ENCRYPTION_BATCH_SIZE', 50, 1, 10_000),
    encryptionBatchPauseMs: int(env, 'TERRACE_ENCRYPTION_BATCH_PAUSE_MS', 0, 0, 60_000),
    logLevel: oneOf(env, 'TERRACE_LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    maxJsonBodyBytes: int(env, 'TERRACE_MAX_BODY_BYTES', 1 * MiB, 1024, 1024 * MiB),
    maxArchiveBytes: int(env, 'TERRACE_MAX_ARCHIVE_BYTES', 512 * MiB, 1024, 64 * 1024 * MiB),
    maxArchiveEntries: int(env, 'TERRACE_MAX_ARCHIVE_ENTRIES', 10_000, 1, 10_000_000),
    maxArchiveUnpackedBytes: int(env, 'TERRACE_MAX_ARCHIVE_UNPACKED_BYTES', 2048 * MiB, 1024, 256 * 1024 * MiB),
    maxArchiveRatio: int(env, 'TERRACE_MAX_ARCHIVE_RATIO', 100, 0, 1_000_000),
    archiveRatioFloorBytes: int(env, 'TERRACE_ARCHIVE_RATIO_FLOOR_BYTES', 10 * MiB, 0, 256 * 1024 * MiB),
    inspectTimeoutMs: int(env, 'TERRACE_INSPECT_TIMEOUT_MS', 10_000, 1, 600_000),
    inspectMaxHeapMb: int(env, 'TERRACE_INSPECT_MAX_HEAP_MB', 256, 16, 8192),
    archiveUrlTtlSeconds: int(env, 'TERRACE_ARCHIVE_URL_TTL', 300, 10, 7 * 24 * 3600),
    uploadUrlTtlSeconds: int(env, 'TERRACE_UPLOAD_URL_TTL', 3600, 10, 7 * 24 * 3600),
    ingestWaitMs: int(env, 'TERRACE_INGEST_WAIT_MS', 60_000, 0, 600_000),
    downloadFlushMs: int(env, 'TERRACE_DOWNLOAD_FLUSH_MS', 250, 10, 60_000),
    registryUpkeepIntervalSeconds: int(env, 'TERRACE_REGISTRY_UPKEEP_INTERVAL', 300, 10, 24 * 3600),
    orphanBlobGraceSeconds: int(env, 'TERRACE_ORPHAN_BLOB_GRACE_SECONDS', 3600, 60, 7 * 24 * 3600),
    publicRead: bool(env, 'TERRACE_PUBLIC_READ', false),
    blobDriver,
    s3: {
      bucket,
      region: str(env, 'TERRACE_S3_REGION') ?? 'us-east-1',
      endpoint: url(env, 'TERRACE_S3_ENDPOINT'),
      prefix: (str(env, 'TERRACE_S3_PREFIX') ?? '').replace(/^\/+/, ''),
      accessKeyId: str(env, 'TERRACE_S3_ACCESS_KEY_ID'),
      secretAccessKey: str(env, 'TERRACE_S3_SECRET_ACCESS_KEY'),
      forcePathStyle: bool(env, 'TERRACE_S3_FORCE_PATH_STYLE', false),
      checksumWhenRequired: bool(env, 'TERRACE_S3_CHECKSUM_WHEN_REQUIRED', true),
      proxyDownloads: bool(env, 'TERRACE_S3_PROXY_DOWNLOADS', false),
    },
    shutdownTimeoutMs: int(env, 'TERRACE_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    http: {
      headersTimeoutMs: int(env, 'TERRACE_HEADERS_TIMEOUT_MS', 30_000, 100, 600_000),
      bodyIdleTimeoutMs: int(env, 'TERRACE_BODY_IDLE_TIMEOUT_MS', 30_000, 100, 3_600_000),
      requestTimeoutMs: int(env, 'TERRACE_REQUEST_TIMEOUT_MS', 300_000, 0, 86_400_000),
      keepAliveTimeoutMs: int(env, 'TERRACE_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
      maxConnections: int(env, 'TERRACE_MAX_CONNECTIONS', 1_000, 1, 1_000_000),
    },
    dataRetentionDays:
      str(env, 'TERRACE_DATA_RETENTION_DAYS') === undefined ? undefined : int(env, 'TERRACE_DATA_RETENTION_DAYS', 0, 1, 36_500),
    retentionSweepIntervalSeconds: int(env, 'TERRACE_RETENTION_SWEEP_INTERVAL', 3600, 60, 7 * 24 * 3600),
    retentionBatchSize: int(env, 'TERRACE_RETENTION_BATCH_SIZE', 100, 1, 10_000),
    jobsEnabled: bool(env, 'TERRACE_JOBS', true),
    cacheSyncMs: int(env, 'TERRACE_CACHE_SYNC_MS', 1000, 50, 60_000),
    cacheMaxEntries: int(env, 'TERRACE_CACHE_MAX_ENTRIES', 50_000, 0, 10_000_000),
    listCacheTtlMs: int(env, 'TERRACE_LIST_CACHE_TTL_MS', 30_000, 100, 3_600_000),
    jobLeaseSeconds: int(env, 'TERRACE_JOB_LEASE_SECONDS', 60, 3, 3600),
    jobIdlePollMs: int(env, 'TERRACE_JOB_IDLE_POLL_MS', 2000, 250, 60_000),
    maxStateBytes: int(env, 'TERRACE_MAX_STATE_BYTES', 64 * MiB, 1024, 4096 * MiB),
    maxConfigurationVersionBytes: int(env, 'TERRACE_MAX_CONFIGURATION_VERSION_BYTES', 512 * MiB, 1024, 64 * 1024 * MiB),
    maxPlanJsonBytes: int(env, 'TERRACE_MAX_PLAN_JSON_BYTES', 256 * MiB, 1024, 16 * 1024 * MiB),
    runTaskRequestTimeoutMs: int(env, 'TERRACE_RUN_TASK_REQUEST_TIMEOUT_MS', 10_000, 100, 120_000),
    edition: oneOf(env, 'TERRACE_EDITION', 'standard', ['free', 'standard', 'premium'] as const),
    vcsRequestTimeoutMs: int(env, 'TERRACE_VCS_REQUEST_TIMEOUT_MS', 10_000, 100, 120_000),
    gitTimeoutMs: int(env, 'TERRACE_GIT_TIMEOUT_MS', 120_000, 1_000, 3_600_000),
    gitMaxFetchBytes: int(env, 'TERRACE_GIT_MAX_FETCH_BYTES', 1024 * MiB, 1024 * 1024, 64 * 1024 * MiB),
    vcsRescanIntervalSeconds: int(env, 'TERRACE_VCS_RESCAN_SECONDS', 600, 1, 7 * 24 * 3600),
    sessionTtlSeconds: int(env, 'TERRACE_SESSION_TTL', 8 * 3600, 300, 30 * 24 * 3600),
    webSweepIntervalSeconds: int(env, 'TERRACE_WEB_SWEEP_INTERVAL', 3600, 60, 7 * 24 * 3600),
    publicUrlConfigured: str(env, 'TERRACE_PUBLIC_URL') !== undefined,
    oidc: oidcIssuer ? { issuer: oidcIssuer, clientId: oidcClientId!, clientSecret: oidcClientSecret!, scopes: oidcScopes, ...groupsMapping } : undefined,
  };
}
