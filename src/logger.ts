import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout. Authorization headers and tokens are never logged. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'terrace' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['req.headers.authorization', 'token', '*.token'], censor: '[redacted]' },
  });
}
