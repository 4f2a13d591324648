import { describe, expect, it } from 'vitest';
import { githubSignatureOk, sameSecret } from '../../src/vcs/webhooks.js';

// Deliveries end to end (GitHub and GitLab formats, replays, branch pushes, bad signatures) are in
// modules.test.ts and modules-lifecycle.test.ts; here, the verification itself against GitHub's
// documented test vector.
describe('webhook verification', () => {
  const secret = "It's a Secret to Everybody";
  const body = Buffer.from('Hello, World!');
  const vector = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

  it("accepts GitHub's documented X-Hub-Signature-256 test vector, in either case", () => {
    expect(githubSignatureOk(body, vector, secret)).toBe(true);
    expect(githubSignatureOk(body, vector.toUpperCase().replace('SHA256=', 'sha256='), secret)).toBe(true);
  });

  it('refuses another body, another secret, a missing, legacy, truncated or malformed signature', () => {
    expect(githubSignatureOk(Buffer.from('Hello, World?'), vector, secret)).toBe(false);
    expect(githubSignatureOk(body, vector, 'another secret')).toBe(false);
    expect(githubSignatureOk(body, undefined, secret)).toBe(false);
    expect(githubSignatureOk(body, 'sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59', secret)).toBe(false);
    expect(githubSignatureOk(body, vector.slice(0, -2), secret)).toBe(false);
    expect(githubSignatureOk(body, vector.slice(7), secret)).toBe(false);
    expect(githubSignatureOk(body, `sha256=${'z'.repeat(64)}`, secret)).toBe(false);
  });

  it("compares GitLab's token as given, whatever its length", () => {
    expect(sameSecret('s3cret', 's3cret')).toBe(true);
    expect(sameSecret('s3cre', 's3cret')).toBe(false);
    expect(sameSecret('', 's3cret')).toBe(false);
    expect(sameSecret('s3cret ', 's3cret')).toBe(false);
  });
});
