import { pino, type Logger } from 'pino';

export type { Logger };

/** Capability URLs carry secrets in their path: log them without it (and without the query). */
export function loggablePath(path: string): string {
  return path.split('?')[0]!.replace(/^(\/(?:archives|uploads|state-files)\/[^/]+\/)[^/]+/, '$1[redacted]');
}

/** Structured JSON logs on stdout. Authorization headers and tokens are never logged. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'terrace' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['req.headers.authorization', 'token', '*.token'], censor: '[redacted]' },
  });
}
