// A large Terraform state, generated as a stream and never held in memory: many resources, each
// with an attribute of incompressible base64 text, as a big real state has. The same seed gives
// the same bytes, so a client can hash it in one pass and upload it in another.
import { createCipheriv, createHash } from 'node:crypto';
import { Readable } from 'node:stream';

const ATTRIBUTE_BYTES = 48 * 1024;

/** About sizeBytes of state (within one resource), as a Readable of Buffers. */
export function bigStateStream(sizeBytes: number, seed = 'terrace-big-state', serial = 1, lineage = 'big-state'): Readable {
  const key = createHash('sha256').update(seed).digest();
  const cipher = createCipheriv('aes-256-ctr', key, Buffer.alloc(16));
  const zeros = Buffer.alloc((ATTRIBUTE_BYTES * 3) / 4);
  async function* gen(): AsyncGenerator<Buffer> {
    let sent = 0;
    const emit = (s: string) => {
      const b = Buffer.from(s);
      sent += b.length;
      return b;
    };
    yield emit(`{"version":4,"terraform_version":"1.9.8","serial":${serial},"lineage":"${lineage}","outputs":{"count":{"value":"generated","type":"string"}},"resources":[`);
    for (let i = 0; sent < sizeBytes; i++) {
      const filler = cipher.update(zeros).toString('base64');
      yield emit(
        `${i ? ',' : ''}{"mode":"managed","type":"terraform_data","name":"r${i}","provider":"provider[\\"terraform.io/builtin/terraform\\"]",` +
          `"instances":[{"schema_version":0,"attributes":{"id":"${i}","input":null,"output":"${filler}"}}]}`,
      );
    }
    yield emit(']}\n');
  }
  return Readable.from(gen(), { objectMode: false });
}

/** Size and MD5 of the state bigStateStream gives for these arguments (one pass, nothing kept). */
export async function bigStateDigest(sizeBytes: number, seed?: string): Promise<{ size: number; md5: string }> {
  const md5 = createHash('md5');
  let size = 0;
  for await (const chunk of bigStateStream(sizeBytes, seed)) {
    md5.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, md5: md5.digest('hex') };
}
