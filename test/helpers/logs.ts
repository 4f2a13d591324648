import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../src/logger.js';

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A pino logger (the same one the server uses) whose JSON lines are kept for the test to read. */
export function capturingLogger(level = 'debug'): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

export const LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;
