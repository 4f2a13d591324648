import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Signed URLs carry "<expiry>.<signature>" in the path. The expiry is signed as the number it
// denotes, so a looser parser would accept other spellings of the same number with the same
// signature: one URL, many spellings. Only the canonical one may open anything.
const EXPIRES = 1_800_000_000; // 18e8 and 0x6B49D200 spell it too

let t: TestServer;
let url: URL;
let capability: string;

beforeAll(async () => {
  // The archive URL lives TERRACE_ARCHIVE_URL_TTL (300 s): now + 300 s is exactly EXPIRES.
  t = await startTestServer({}, { clock: new ManualClock(new Date((EXPIRES - 300) * 1000)) });
  await createOrganization(t, 'acme');
  await publish(t, 'acme', 'net', 'aws', '1.0.0');
  const dl = await t.api('GET', '/v1/modules/acme/net/aws/1.0.0/download');
  url = new URL(dl.headers.get('x-terraform-get')!, t.url);
  capability = url.pathname.split('/')[3]!;
});
afterAll(async () => {
  await t.close();
});

const withExpiry = (spelled: string) => {
  const u = new URL(url);
  const parts = u.pathname.split('/');
  parts[3] = `${spelled}${capability.slice(capability.indexOf('.'))}`;
  u.pathname = parts.join('/');
  return u;
};

describe('signed archive URL expiry', () => {
  it('is written canonically, and the canonical URL opens the archive', async () => {
    expect(capability.split('.')[0]).toBe(String(EXPIRES));
    const res = await fetch(withExpiry(String(EXPIRES)));
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  it.each([
    ['hexadecimal', '0x6B49D200'],
    ['a leading space', '%201800000000'],
    ['a leading plus', '+1800000000'],
    ['a leading zero', '01800000000'],
    ['an exponent', '18e8'],
    ['a trailing space', '1800000000%20'],
    ['binary', '0b1101011010010011101001000000000'],
  ])('refuses %s with 404 and the same message as a tampered URL', async (_name, spelled) => {
    const res = await fetch(withExpiry(spelled));
    expect(res.status).toBe(404);
    const body = (await res.json()) as { errors: { detail: string }[] };
    expect(body.errors[0]!.detail).toBe('this archive URL is invalid or has expired; ask the registry for a new one');
  });
});
