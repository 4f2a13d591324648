import { describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { WriteBatch, type BatchedAnswer } from '../../src/http/write-batch.js';

/**
 * The batch on its own, with stand-in responses: what HTTP cannot provoke on demand (an end()
 * that throws) and exactly when answers are written. Through a real server: the lean path's
 * tests in test/registry/lean-path.test.ts.
 */
interface Answer extends BatchedAnswer {
  name: string;
}

function recorder() {
  const ended: string[] = [];
  const after: string[] = [];
  const errors: unknown[] = [];
  const answer = (name: string, opts: { throws?: boolean; body?: boolean } = {}): Answer => ({
    name,
    body: opts.body ? new Uint8Array([1]) : undefined,
    res: {
      end: (body?: Uint8Array) => {
        if (opts.throws) throw new Error(`${name} failed`);
        ended.push(body ? `${name}+body` : name);
      },
    } as unknown as ServerResponse,
  });
  return { ended, after, errors, answer };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('WriteBatch', () => {
  it('ends nothing while requests are being handled, then every answer at once, in order', async () => {
    const r = recorder();
    const batch = new WriteBatch<Answer>(10, (a) => r.after.push(a.name), (e) => r.errors.push(e));
    batch.add(r.answer('a', { body: true }));
    batch.add(r.answer('b'));
    await Promise.resolve();
    expect(r.ended).toEqual([]);
    await tick();
    expect(r.ended).toEqual(['a+body', 'b']);
    expect(r.after).toEqual(['a', 'b']);
    batch.add(r.answer('c'));
    await tick();
    expect(r.ended).toEqual(['a+body', 'b', 'c']);
  });

  it('a full batch is written at once, without waiting', () => {
    const r = recorder();
    const batch = new WriteBatch<Answer>(3, (a) => r.after.push(a.name), (e) => r.errors.push(e));
    batch.add(r.answer('a'));
    batch.add(r.answer('b'));
    expect(r.ended).toEqual([]);
    batch.add(r.answer('c'));
    expect(r.ended).toEqual(['a', 'b', 'c']);
  });

  it('an answer that cannot be written is reported and the rest of its batch is still written', async () => {
    const r = recorder();
    const batch = new WriteBatch<Answer>(10, (a) => r.after.push(a.name), (e) => r.errors.push(e));
    batch.add(r.answer('a'));
    batch.add(r.answer('b', { throws: true }));
    batch.add(r.answer('c'));
    await tick();
    expect(r.ended).toEqual(['a', 'c']);
    expect(r.after).toEqual(['a', 'c']);
    expect(r.errors.map((e) => (e as Error).message)).toEqual(['b failed']);
  });
});
