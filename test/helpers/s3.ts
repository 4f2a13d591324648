import fs from 'node:fs';
import S3rver from 's3rver';
import { tempDir } from './server.js';

export interface S3Fake {
  /** Where s3rver keeps the objects (each as <bucket>/<key>._S3rver_object). */
  dir: string;
  /** The settings that point Terrace's s3 driver at it (bucket "modules", path style). */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** s3rver on loopback with a "modules" bucket, and the Terrace settings that use it. */
export async function startS3Fake(extra: Record<string, string> = {}): Promise<S3Fake> {
  const dir = tempDir('terrace-s3-');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: 'modules' }] });
  const { port } = await server.run();
  return {
    dir,
    env: {
      TERRACE_BLOB_DRIVER: 's3',
      TERRACE_S3_BUCKET: 'modules',
      TERRACE_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      TERRACE_S3_ACCESS_KEY_ID: 'S3RVER',
      TERRACE_S3_SECRET_ACCESS_KEY: 'S3RVER',
      TERRACE_S3_FORCE_PATH_STYLE: 'true',
      ...extra,
    },
    async close() {
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
