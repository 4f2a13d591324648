// Summarizes a V8 .cpuprofile (from `node --cpu-prof`): self time by function and by area
// (a package under node_modules, a file under src/, node internals, GC, idle).
//
//   npx tsx bench/cpuprofile-top.ts <file.cpuprofile> [--top 25]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { markdownTable, parseFlags } from './common.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

function area(url: string, fn: string): string {
  if (fn === '(idle)' || fn === '(program)' || fn === '(garbage collector)') return fn;
  if (!url) return '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  const src = /\/((?:src|bench|migrations)\/.*)$/.exec(url);
  return src ? src[1]! : url;
}

export function summarize(file: string, top = 25): string {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // Self time per node from the sample stream (exact), falling back to hit counts.
  const selfUs = new Map<number, number>();
  if (profile.samples && profile.timeDeltas) {
    for (let i = 0; i < profile.samples.length; i++) {
      const next = profile.timeDeltas[i + 1] ?? 0;
      selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + Math.max(0, next));
    }
  } else {
    const interval = (profile.endTime - profile.startTime) / Math.max(1, profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0));
    for (const n of profile.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * interval);
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = [...selfUs.entries()].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((s, [, v]) => s + v, 0);
  const busy = total - idle;

  const byFn = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    if (functionName === '(idle)') continue;
    const where = area(url, functionName);
    const key = `${functionName || '(anonymous)'} — ${where}${url ? `:${lineNumber + 1}` : ''}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    byArea.set(where, (byArea.get(where) ?? 0) + us);
  }
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1)}%`;
  const rows = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => [k, `${(us / 1000).toFixed(0)} ms`, pct(us)]);
  return [
    `profile ${path.basename(file)}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (not idle)`,
    '',
    'Self time by area:',
    markdownTable(['area', 'self', 'of busy'], rows(byArea), ['l', 'r', 'r']),
    '',
    'Self time by function:',
    markdownTable(['function', 'self', 'of busy'], rows(byFn), ['l', 'r', 'r']),
  ].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const flags = parseFlags(process.argv.slice(3), { top: 'string' });
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: npx tsx bench/cpuprofile-top.ts <file.cpuprofile> [--top 25]\n');
    process.exit(2);
  }
  process.stdout.write(`${summarize(file, Number(flags.top ?? 25))}\n`);
}
