/** Exit codes scripts can rely on; the README lists them. */
export const EXIT = {
  ok: 0,
  /** The operation failed: the server refused it, a version errored, a bundle did not verify. */
  failed: 1,
  /** The command line was wrong: unknown command or flag, a missing argument. */
  usage: 2,
  /** No credentials for the host, or the server rejected them (401). */
  auth: 3,
  /** What was asked for does not exist, or the caller may not see it (404). */
  notFound: 4,
  /** The server could not be reached or kept failing after retries. */
  unavailable: 5,
} as const;

/** An error whose message is for the user: what failed, then what to do. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
    readonly hint?: string,
  ) {
    super(message);
  }
}

export const usageError = (message: string, hint?: string) => new CliError(message, EXIT.usage, hint);
