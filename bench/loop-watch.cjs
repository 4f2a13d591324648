// Preload for a Terrace under load: where its latency tail comes from.
//
//   LOOP_WATCH_OUT=loop.txt node -r ./bench/loop-watch.cjs dist/server/main.mjs
//
// Appends one line per garbage collection over 2 ms (its kind and duration) and one per event-loop
// turn over 10 ms (a 2 ms timer that fired that much late: the loop was busy, or the process was
// not on its core), each with the wall-clock time, so they can be lined up with the rounds of a
// load run. Lines are written every 2 s and at exit; nothing else in the process changes.
'use strict';
const fs = require('node:fs');
const { PerformanceObserver, performance } = require('node:perf_hooks');

const out = process.env.LOOP_WATCH_OUT || `loop-watch-${process.pid}.txt`;
const KINDS = { 1: 'scavenge', 2: 'minor-mark-sweep', 4: 'mark-compact', 8: 'incremental', 16: 'weak-callbacks' };
let lines = [];
const wall = () => new Date().toISOString().slice(11, 23);

new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.duration > 2) lines.push(`${wall()} gc ${KINDS[e.detail && e.detail.kind] || 'other'} ${e.duration.toFixed(1)} ms`);
  }
}).observe({ entryTypes: ['gc'] });

let last = performance.now();
setInterval(() => {
  const now = performance.now();
  if (now - last > 12) lines.push(`${wall()} turn ${(now - last - 2).toFixed(1)} ms`);
  last = now;
}, 2).unref();

const flush = () => {
  if (lines.length === 0) return;
  fs.appendFileSync(out, lines.join('\n') + '\n');
  lines = [];
};
setInterval(flush, 2000).unref();
process.on('exit', flush);
