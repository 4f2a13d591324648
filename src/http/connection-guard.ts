import type { IncomingMessage, Server } from 'node:http';
import type { Config } from '../config.js';
import { loggablePath, type Logger } from '../logger.js';

/** Upload URLs stream large bodies for as long as they keep moving: no whole-request deadline. */
const isUploadPath = (url: string | undefined) => (url ?? '').startsWith('/uploads/');

interface Watched {
  req: IncomingMessage;
  startedAt: number;
  lastBytes: number;
  lastMovedAt: number;
}

/**
 * Applies config.http to a listener (node:http or node:https; they share these settings):
 *
 * - headers: Node's headersTimeout (a client that trickles its headers is answered 408 and closed);
 * - keep-alive: keepAliveTimeout;
 * - connections: maxConnections (Node closes a connection over the cap as soon as it arrives);
 * - body idle: a request whose body has received no byte for bodyIdleTimeoutMs is closed. "No
 *   byte" is measured on the socket, and only while Terrace is waiting for the client: when
 *   Terrace itself is not reading (its buffer is full because the blob store is slow), the
 *   client is not to blame. An upload that keeps moving is never cut, however long it takes;
 * - whole request: requestTimeoutMs to receive a whole request, headers and body, except on
 *   upload URLs (bounded by the idle rule instead). Node's own requestTimeout would cut a slow
 *   but steady 500 MB upload, so it is off and this takes its place.
 *
 * One sweep per listener checks the bodies in flight; requests without a body cost one lookup.
 */
export function guardConnections(server: Server, http: Config['http'], logger: Logger): () => void {
  server.headersTimeout = http.headersTimeoutMs;
  server.requestTimeout = 0;
  server.keepAliveTimeout = http.keepAliveTimeoutMs;
  server.maxConnections = http.maxConnections;

  const watched = new Set<Watched>();
  server.on('request', (req: IncomingMessage) => {
    // A client that goes away mid-body makes Node emit 'error' on the request. Its reader handles
    // it while it reads, but a reader that has already let go (a refused or finished upload) is no
    // longer listening, and an 'error' nobody listens to would crash the process. The app logs the
    // abort as what it is (app.ts onError); here it only must not be fatal.
    req.on('error', ignore);
    if (req.complete || !hasBody(req)) return;
    const now = Date.now();
    const w: Watched = { req, startedAt: now, lastBytes: req.socket.bytesRead, lastMovedAt: now };
    watched.add(w);
    const done = () => watched.delete(w);
    req.once('end', done);
    req.once('close', done);
  });

  const sweepMs = Math.max(50, Math.min(1000, Math.floor(Math.min(http.bodyIdleTimeoutMs, http.requestTimeoutMs || Infinity) / 4)));
  const timer = setInterval(() => {
    const now = Date.now();
    for (const w of watched) {
      const { req } = w;
      if (req.complete || req.destroyed) {
        watched.delete(w);
        continue;
      }
      const bytes = req.socket.bytesRead;
      const waitingForClient = req.readableLength < req.readableHighWaterMark;
      if (bytes !== w.lastBytes || !waitingForClient) {
        w.lastBytes = bytes;
        w.lastMovedAt = now;
      }
      let reason: string | null = null;
      if (now - w.lastMovedAt >= http.bodyIdleTimeoutMs) reason = `no byte of the request body for ${http.bodyIdleTimeoutMs} ms (TERRACE_BODY_IDLE_TIMEOUT_MS)`;
      else if (http.requestTimeoutMs > 0 && !isUploadPath(req.url) && now - w.startedAt >= http.requestTimeoutMs) {
        reason = `the request was not received within ${http.requestTimeoutMs} ms (TERRACE_REQUEST_TIMEOUT_MS)`;
      }
      if (reason) {
        watched.delete(w);
        logger.info({ method: req.method, path: loggablePath(req.url ?? ''), reason }, 'request closed: too slow');
        req.socket.destroy();
      }
    }
  }, sweepMs);
  timer.unref();
  return () => clearInterval(timer);
}

const ignore = () => undefined;

function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}
