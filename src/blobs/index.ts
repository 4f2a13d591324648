import path from 'node:path';
import { FsBlobStore } from './fs.js';
import { S3BlobStore, type S3BlobStoreOptions } from './s3.js';
import type { BlobStore } from './types.js';

export * from './types.js';
export { assertValidKey } from './keys.js';
export { FsBlobStore } from './fs.js';
export { S3BlobStore, type S3BlobStoreOptions } from './s3.js';

/** Shaped so Config's blobDriver/dataDir/s3 settings can be passed straight through. */
export interface BlobStoreConfig {
  driver: 'fs' | 's3';
  dataDir: string;
  s3: Omit<S3BlobStoreOptions, 'bucket'> & { bucket?: string | undefined };
}

export function createBlobStore(cfg: BlobStoreConfig): BlobStore {
  switch (cfg.driver) {
    case 'fs':
      return new FsBlobStore(path.join(cfg.dataDir, 'blobs'));
    case 's3': {
      const { bucket, ...rest } = cfg.s3;
      // Config validation already demands a bucket for s3; checked again for other callers.
      if (!bucket) throw new Error('S3 blob store requires a bucket');
      return new S3BlobStore({ ...rest, bucket });
    }
  }
}
