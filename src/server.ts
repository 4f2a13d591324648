import fs from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { createApp } from './app.js';
import { createMetrics } from './ops/metrics.js';
import { leanRegistryPath, type NodeListener } from './registry/lean.js';
import { DownloadCounter } from './registry/downloads.js';
import { repairDeadUploads } from './registry/ingest.js';
import { FsBlobStore } from './blobs/fs.js';
import { SealedBlobStore } from './blobs/sealed.js';
import { dataKeyStore } from './encryption/store.js';
import { ENCRYPTION_UPKEEP, upkeepPending } from './encryption/upkeep.js';
import { systemClock, type Clock } from './clock.js';
import { ConfigError, type Config } from './config.js';
import { openSqlite } from './db/index.js';
import { Generations } from './db/generations.js';
import type { Deps } from './deps.js';
import { guardConnections } from './http/connection-guard.js';
import { ensureAdminToken } from './identity/bootstrap.js';
import { jobHandlers, recurringJobs, registerDomainHooks } from './domains.js';
import { enqueueOnce, JobRunner } from './jobs/runner.js';
import { createLogger, type Logger } from './logger.js';
import { Secrets } from './secrets.js';

export interface RunningServer {
  deps: Deps;
  /** The address actually bound (port 0 resolves to a real port). */
  url: string;
  /** Set only on the start that generated the admin token: print it once, never store it. */
  generatedAdminToken: string | null;
  /** The background job runner (started unless TERRACE_JOBS=false; runDue() drives it by hand). */
  jobs: JobRunner;
  /** Stop accepting, finish in-flight requests (up to the shutdown timeout), write pending download counts, close the store. */
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
}

/** Wires config → store → blob store → app → listener. Used by main.ts and by tests. */
export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  fs.mkdirSync(config.dataDir, { recursive: true });
  // A key generated into one instance's data dir would differ on every other instance sharing the
  // database: their signed URLs and sealed secrets would not open on each other.
  if (config.database && !config.secretKey && config.encryptionKeys.length === 0 && !fs.existsSync(path.join(config.dataDir, 'secret.key'))) {
    throw new ConfigError(
      'TERRACE_SECRET_KEY',
      'is required with TERRACE_DATABASE_URL (or TERRACE_ENCRYPTION_KEYS, or the same secret.key in every data dir): every instance sharing the database must use the same key',
    );
  }
  const { secrets, generated } = Secrets.load(config.dataDir, config.secretKey, config.encryptionKeys);
  if (generated) logger.info('generated a new server secret key in the data directory');

  // The PostgreSQL driver and the AWS SDK are loaded only when configured: together they are a
  // third of the time it takes to load Terrace.
  const store = config.database
    ? (await import('./db/postgres.js')).openPostgres(config.database, logger)
    : openSqlite(path.join(config.dataDir, 'terrace.db'));
  try {
    const applied = await store.migrate();
    if (applied.length) logger.info({ migrations: applied }, 'applied migrations');
  } catch (err) {
    await store.close();
    throw err;
  }
  const clock = opts.clock ?? systemClock;
  const stored =
    config.blobDriver === 'fs'
      ? new FsBlobStore(path.join(config.dataDir, 'blobs'))
      : (await import('./blobs/index.js')).createBlobStore({ driver: config.blobDriver, dataDir: config.dataDir, s3: config.s3 });
  const blobs = new SealedBlobStore(stored, secrets, dataKeyStore(store.db, clock));
  const generations = new Generations(store.db, logger, config.cacheSyncMs);
  await generations.sync();
  generations.start();
  const downloads = new DownloadCounter(store.background, logger, { flushMs: config.downloadFlushMs });
  const deps: Deps = { config: { ...config }, store, db: store.db, blobs, clock, logger, secrets, generations, downloads };
  const generatedAdminToken = await ensureAdminToken(deps);
  if (stored instanceof FsBlobStore) await stored.sweepTemp(0);
  // Start-up repair of a process killed mid-publish: dead uploads get their URLs back before
  // serving (one indexed query). The orphan-archive sweep lists every module blob, so it never
  // runs here: only as its leased recurring job (registry.orphan-sweep), after the server listens.
  await repairDeadUploads(deps);
  registerDomainHooks();
  const jobs = new JobRunner(deps, jobHandlers(), { recurring: recurringJobs(config), leaseMs: config.jobLeaseSeconds * 1000, idlePollMs: config.jobIdlePollMs });
  await jobs.ensureRecurring();
  if (config.jobsEnabled) jobs.start();
  downloads.start();
  const metrics = createMetrics(deps);
  const app = createApp(deps, metrics);
  const lean = leanRegistryPath(deps, metrics);
  // node:http (or https) with the registry's lean path in front of the app's listener.
  const withLeanPath =
    (create: (options: object, listener: NodeListener) => Server) =>
    (options: object, listener: NodeListener) =>
      create(options, (req: IncomingMessage, res: ServerResponse) => lean(req, res, listener));

  // How often Node checks headers deadlines (its default, 30 s, would make a short one meaningless).
  const connectionsCheckingInterval = Math.max(50, Math.min(1000, Math.floor(config.http.headersTimeoutMs / 4)));
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve(
      {
        fetch: app.fetch,
        port: config.port,
        hostname: config.host,
        ...(config.tlsCert && config.tlsKey
          ? {
              createServer: withLeanPath(createHttpsServer as never) as never,
              serverOptions: { cert: fs.readFileSync(config.tlsCert), key: fs.readFileSync(config.tlsKey), connectionsCheckingInterval },
            }
          : { createServer: withLeanPath(createHttpServer as never) as never, serverOptions: { connectionsCheckingInterval } }),
      },
      () => resolve(s),
    );
    s.once('error', reject);
  });
  const unguard = guardConnections(server as Server, config.http, logger);
  // A start may bring a new current key, or find blobs from before encryption: then the upkeep
  // runs at once. Finding out reads every blob's key row, so it happens while the server already
  // serves (nothing served depends on it); start-up returns once it is known.
  if (await upkeepPending(deps)) await enqueueOnce(deps.db, ENCRYPTION_UPKEEP, { run: null }, clock.now());
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `${config.tlsCert ? 'https' : 'http'}://${host}:${addr.port}`;
  // With PORT=0 the default public URL could not name the port until now.
  if (/:0$/.test(deps.config.publicUrl)) deps.config.publicUrl = url;

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          logger.warn('shutdown timeout reached: closing remaining connections');
          (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        }, config.shutdownTimeoutMs);
        timer.unref();
        // Keep-alive connections become idle as their requests finish: close them as they do.
        const closeIdle = () => (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
        const sweeper = setInterval(closeIdle, 50);
        server.close(() => {
          clearTimeout(timer);
          clearInterval(sweeper);
          resolve();
        });
        closeIdle();
      });
      unguard();
      await jobs.stop();
      // No request can count a download any more: what is pending is written before the store closes.
      await downloads.stop();
      generations.stop();
      await store.close();
    })();
    return closing;
  };

  return { deps, url, generatedAdminToken, jobs, close };
}
