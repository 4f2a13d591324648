import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/index.js';
import { GenerationCache, Generations } from '../../src/db/generations.js';
import { createLogger } from '../../src/logger.js';

/**
 * GenerationCache's bounds, on their own: entries by count, and by weight where a byte budget is
 * given (the version-detail cache's, whose values run from bytes to megabytes). The generations
 * are never read from a store here: retireAll() stands for a write.
 */
function generations(): Generations {
  return new Generations({} as Db, createLogger('silent'), 1000);
}

const sized = (maxEntries: number, maxBytes: number) => {
  const g = generations();
  return { g, cache: new GenerationCache<string, string>(g, 'registry', maxEntries, 0, 0, { maxBytes, sizeOf: (v) => v.length }) };
};

describe('GenerationCache', () => {
  it('holds at most maxEntries, oldest out first', () => {
    const g = generations();
    const cache = new GenerationCache<string, number>(g, 'registry', 2);
    for (const [k, v] of [['a', 1], ['b', 2], ['c', 3]] as const) cache.set(k, v, cache.generation());
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3]);
    expect(cache.size).toBe(2);
  });

  it('with a byte budget, drops the oldest entries until a new one fits, and keeps the weight exact', () => {
    const { cache } = sized(100, 10);
    cache.set('a', 'xxxx', cache.generation());
    cache.set('b', 'xxxx', cache.generation());
    expect(cache.weight).toBe(8);
    cache.set('c', 'xxxxx', cache.generation());
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 'xxxx', 'xxxxx']);
    expect(cache.weight).toBe(9);
    // Replacing a key counts its new value only.
    cache.set('b', 'x', cache.generation());
    expect(cache.weight).toBe(6);
    cache.delete('c');
    expect(cache.weight).toBe(1);
    expect(cache.size).toBe(1);
  });

  it('does not store a value heavier than the whole budget, and leaves the others in place', () => {
    const { cache } = sized(100, 10);
    cache.set('small', 'xxx', cache.generation());
    cache.set('huge', 'x'.repeat(11), cache.generation());
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.get('small')).toBe('xxx');
    expect(cache.weight).toBe(3);
  });

  it('gives back the weight of entries a moved generation retired, as they are found', () => {
    const { g, cache } = sized(100, 10);
    cache.set('a', 'xxxxxx', cache.generation());
    g.retireAll();
    expect(cache.get('a')).toBeUndefined();
    expect(cache.weight).toBe(0);
    cache.set('b', 'xxxxxxxxxx', cache.generation());
    expect(cache.get('b')).toBe('xxxxxxxxxx');
  });

  it('stores nothing read under a generation that has moved since', () => {
    const { g, cache } = sized(100, 10);
    const before = cache.generation();
    g.retireAll();
    cache.set('a', 'x', before);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.weight).toBe(0);
  });
});
