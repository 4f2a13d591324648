import type { ServerResponse } from 'node:http';

/** How many answers a batch holds at most: the first of a full batch waits a few milliseconds at worst. */
export const WRITE_BATCH_MAX = 64;

/** One answer a batch ends: its response (head already set with writeHead, which Node sends with the body) and its body, if any. */
export interface BatchedAnswer {
  res: ServerResponse;
  body: Uint8Array | undefined;
}

/**
 * Answers ended together once the event loop has handled the requests it read in one go, rather
 * than each as soon as it is made: the first add() schedules the batch with setImmediate, which
 * runs after the loop's poll phase, so every answer made from that read goes to its socket back
 * to back, and then max answers at the latest.
 *
 * Why: on loopback (a reverse proxy on the same host, the benchmark's load generator) a socket
 * write also runs the receiver's side of TCP and wakes the receiving process when it sleeps. Made
 * one at a time, each answer's write tends to find the receiver asleep again and pays for its
 * wake-up; written together, one wake-up serves the batch and the next requests come back
 * together too. An answer waits at most for the others of its batch to be made (a lean answer
 * takes tens of microseconds, so max bounds the wait to a few milliseconds); a lone request is
 * written right after its poll phase.
 *
 * after(answer, now) is called right after each answer is handed to its socket (now from
 * performance.now()), for its metrics and access log; an error thrown by end() or after() is
 * passed to onError and the rest of the batch is still written.
 */
export class WriteBatch<A extends BatchedAnswer> {
  private pending: A[] = [];
  private scheduled = false;

  constructor(
    private readonly max: number,
    private readonly after: (answer: A, now: number) => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  add(answer: A): void {
    this.pending.push(answer);
    if (this.pending.length >= this.max) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.scheduledFlush);
    }
  }

  private readonly scheduledFlush = (): void => {
    this.scheduled = false;
    this.flush();
  };

  /** Ends every pending answer now, in the order they were added. */
  flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    for (const answer of batch) {
      try {
        if (answer.body) answer.res.end(answer.body);
        else answer.res.end();
        this.after(answer, performance.now());
      } catch (err) {
        this.onError(err);
      }
    }
  }
}
