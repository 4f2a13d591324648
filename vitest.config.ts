import { defineConfig } from 'vitest/config';
import { postgresAvailable } from './test/helpers/postgres.js';

/**
 * The test directories that also run against a real PostgreSQL (the "postgres" project): all of
 * them. A new test directory is added here too.
 */
export const POSTGRES_TEST_DIRS = [
  'registry',
  'organizations',
  'teams',
  'workspaces',
  'state',
  'runs',
  'runtasks',
  'encryption',
  'hardening',
  'identity',
  'projects',
  'db',
  'vcs',
  'blobs',
  'cli',
  'foundation',
  'fuzz',
  'gotfe',
  'http',
  'web',
];

/**
 * Files in those directories that test nothing the store takes part in, and are slow: they run
 * on SQLite only.
 */
const POSTGRES_SKIP_FILES = [
  // A Go client (go-getter) built and run against archive URLs.
  'test/registry/go-getter.test.ts',
  // Archive parsing and decompression bounds.
  'test/registry/decompression-bomb.test.ts',
  // Connection limits of the listener.
  'test/hardening/connections.test.ts',
  // A memory measurement of a server process on its own data dir.
  'test/encryption/memory.test.ts',
  // The blob drivers (fs, S3, sealed) on their own, with no SQL store.
  'test/blobs/conformance.test.ts',
  // Signals, exit codes and the first-start token of server processes on their own SQLite data dirs.
  'test/foundation/process.test.ts',
  // Where the CLI finds its token (environment, CLI config, credentials file); the server only checks it.
  'test/cli/credentials.test.ts',
];

const pg = postgresAvailable();
if (!pg.ok && process.env.TERRACE_TEST_STORE !== 'sqlite') {
  console.warn(`\nnote: the PostgreSQL test project is skipped: ${pg.why}\n`);
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Each test file's temp dirs (data dirs, homes) are removed after it.
    setupFiles: ['./test/helpers/temp-dirs-setup.ts'],
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: ['test/**/*.test.ts'], env: { TERRACE_TEST_STORE: 'sqlite' } },
      },
      ...(pg.ok
        ? [
            {
              extends: true,
              test: {
                name: 'postgres',
                include: POSTGRES_TEST_DIRS.map((d) => `test/${d}/**/*.test.ts`),
                exclude: POSTGRES_SKIP_FILES,
                env: { TERRACE_TEST_STORE: 'postgres' },
                globalSetup: ['./test/helpers/postgres-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});
