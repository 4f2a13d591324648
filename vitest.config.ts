import { defineConfig } from 'vitest/config';
import { postgresAvailable } from './test/helpers/postgres.js';

/**
 * The API test directories that also run against a real PostgreSQL (the "postgres" project).
 * A domain whose SQL must work on both stores adds its directory here.
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
];

/**
 * Files in those directories that test nothing the store takes part in, and are slow: they run
 * on SQLite only. (Archive parsing and decompression bounds, a Go client build, connection
 * limits, and a memory measurement of a server process on its own data dir.)
 */
const POSTGRES_SKIP_FILES = [
  'test/registry/go-getter.test.ts',
  'test/registry/decompression-bomb.test.ts',
  'test/hardening/connections.test.ts',
  'test/encryption/memory.test.ts',
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
