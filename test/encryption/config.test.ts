import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const key = (b: number) => Buffer.alloc(32, b).toString('base64');

describe('TERRACE_ENCRYPTION_KEYS', () => {
  it('reads id:base64key pairs in order, the first being current', () => {
    const c = loadConfig({ TERRACE_ENCRYPTION_KEYS: `new:${key(1)}, old_1:${key(2)}` });
    expect(c.encryptionKeys.map((k) => k.id)).toEqual(['new', 'old_1']);
    expect(c.encryptionKeys[0]!.material.equals(Buffer.alloc(32, 1))).toBe(true);
    expect(loadConfig({}).encryptionKeys).toEqual([]);
  });

  it.each([
    ['nocolon', 'must be a comma-separated list of id:base64key'],
    [`bad.id:${key(1)}`, 'must be a comma-separated list of id:base64key'],
    [`default:${key(1)}`, 'the id "default" is reserved'],
    [`a:${key(1)},a:${key(2)}`, 'the id "a" is listed twice'],
    [`a:${Buffer.alloc(16).toString('base64')}`, 'the key "a" must be 32 random bytes in base64'],
    ['a:not base64!', 'the key "a" must be 32 random bytes in base64'],
  ])('refuses %s, saying what to change', (value, message) => {
    expect(() => loadConfig({ TERRACE_ENCRYPTION_KEYS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ TERRACE_ENCRYPTION_KEYS: value })).toThrow(message);
  });
});
