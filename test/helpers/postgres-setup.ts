import type { TestProject } from 'vitest/node';
import { startPostgresCluster, type PostgresCluster } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}

let cluster: PostgresCluster | undefined;

/** Once per run of the postgres project: a server for every test file (each test server makes its own database). */
export async function setup(project: TestProject): Promise<void> {
  const given = process.env.TERRACE_TEST_POSTGRES_URL;
  if (given) {
    project.provide('postgresUrl', given);
    return;
  }
  cluster = await startPostgresCluster();
  project.provide('postgresUrl', cluster.url);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
