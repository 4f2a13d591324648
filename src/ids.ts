import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Random base62 string; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export type IdPrefix =
  | 'user' | 'at' | 'org' | 'team' | 'ou' | 'apool' | 'drp' | 'ws' | 'sv' | 'wsout'
  | 'oc' | 'ot' | 've' | 'task' | 'wstask' | 'taskrs' | 'ts' | 'run' | 'cv' | 'mod' | 'modver' | 'job'
  | 'prj' | 'tag' | 'tb' | 'dk' | 'tro';

/** The one id generator: HCP-style prefix plus a 16-character random suffix. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}-${randomBase62(16)}`;
}
