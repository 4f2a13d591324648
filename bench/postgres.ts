// PostgreSQL for the benchmark: the test suite's cluster helper (initdb + postgres in a temp dir on
// a free loopback port, as the "postgres" user when run as root), one database seeded with the
// same registry as the SQLite seed, and the cluster stopped however the benchmark exits.
import { createTestDatabase, postgresAvailable, startPostgresCluster } from '../test/helpers/postgres.js';
import { log, pinProcess, trackResource } from './common.js';
import { seedPostgres, type SeedOptions } from './seed.js';

export { postgresAvailable };

export interface BenchPostgres {
  /** The seeded database's URL (TERRACE_DATABASE_URL). */
  url: string;
  /** The postmaster's pid: its backends are forked from it. */
  pid: number;
  seedSeconds: number;
  stop(): Promise<void>;
}

/**
 * Starts a cluster and seeds a database from the SQLite seed in seedDir. Afterwards the postmaster
 * is pinned to cpu, so every backend a Terrace connection forks from then on shares the servers'
 * core (the seeding itself ran unpinned).
 */
export async function startSeededPostgres(seedDir: string, opts: SeedOptions, cpu: number | undefined): Promise<BenchPostgres> {
  const cluster = await startPostgresCluster();
  const stop = trackResource({
    stop: () => cluster.stop(),
    kill: () => {
      try {
        process.kill(cluster.pid, 'SIGQUIT');
      } catch {
        // already gone
      }
    },
  });
  try {
    const db = await createTestDatabase(cluster.url);
    log('seeding PostgreSQL from the SQLite seed');
    const seedSeconds = await seedPostgres(db.url, seedDir, opts);
    if (cpu !== undefined && !pinProcess(cluster.pid, cpu)) log(`could not pin PostgreSQL (pid ${cluster.pid}) to core ${cpu}`);
    return { url: db.url, pid: cluster.pid, seedSeconds, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
