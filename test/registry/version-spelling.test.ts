import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeRequestedVersion } from '../../src/registry/names.js';

// Download requests name a version in any spelling go-version accepts; the canonical one (how
// Terraform asks) is returned as it is without being parsed, every other is rebuilt. Both must
// agree: a spelling and its canonical form name the same version.
describe('normalizeRequestedVersion', () => {
  const part = fc.bigInt({ min: 0n, max: 10n ** 20n });
  const ident = fc.stringMatching(/^[0-9A-Za-z-]{1,8}(\.[0-9A-Za-z-]{1,8}){0,2}$/);
  const version = fc.record({ major: part, minor: part, patch: part, pre: fc.option(ident, { nil: undefined }), build: fc.option(ident, { nil: undefined }) });
  const canonical = (v: { major: bigint; minor: bigint; patch: bigint; pre?: string; build?: string }) =>
    `${v.major}.${v.minor}.${v.patch}${v.pre ? `-${v.pre}` : ''}${v.build ? `+${v.build}` : ''}`;

  it('gives a canonical spelling back unchanged', () => {
    fc.assert(fc.property(version, (v) => normalizeRequestedVersion(canonical(v)) === canonical(v)));
  });

  it('maps every other spelling of a version to its canonical one', () => {
    const spelling = fc.record({ v: fc.boolean(), zeros: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 3, maxLength: 3 }) });
    fc.assert(
      fc.property(version, spelling, (v, s) => {
        const pad = (n: bigint, i: number) => '0'.repeat(s.zeros[i]!) + String(n);
        const raw = `${s.v ? 'v' : ''}${pad(v.major, 0)}.${pad(v.minor, 1)}.${pad(v.patch, 2)}${v.pre ? `-${v.pre}` : ''}${v.build ? `+${v.build}` : ''}`;
        expect(normalizeRequestedVersion(raw)).toBe(canonical(v));
      }),
    );
    expect(normalizeRequestedVersion('1.1')).toBe('1.1.0');
    expect(normalizeRequestedVersion('v2')).toBe('2.0.0');
    expect(normalizeRequestedVersion('01.1.0')).toBe('1.1.0');
  });

  it('refuses what is no version', () => {
    for (const raw of ['', 'v', 'garbage', '1.2.3.4', '1..2', '1.2.3-', '1.2.3+', ' 1.2.3', '1.2.3 ', '1.2.3-beta_1', '-1.2.3']) expect(normalizeRequestedVersion(raw), raw).toBeNull();
  });
});
