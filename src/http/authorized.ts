import { AsyncLocalStorage } from 'node:async_hooks';
import type { MiddlewareHandler } from 'hono';
import type { ApiError } from './errors.js';

/**
 * Who may act is decided before anything looks at the request body: a 422 from validating the
 * body of a caller who may not act would reveal that the resource exists. The step that
 * authorizes (a service's require or "for update" call) records it in the request's scope; the
 * body readers in body.ts refuse to run until it has. The scope is per request, so services
 * record it without knowing about HTTP.
 */
interface RequestScope {
  mayReadBody: boolean;
}

const scope = new AsyncLocalStorage<RequestScope>();

/** Opens the scope in which one request's authorization is recorded (mounted first in app.ts). */
export const authorizationScope: MiddlewareHandler = (_c, next) => scope.run({ mayReadBody: false }, next);

/**
 * Refuses with refusal() unless allowed; when allowed, records that the caller may act in this
 * request, so its body may now be read. Every service check that lets a caller change something
 * goes through here.
 */
export function authorize(allowed: boolean, refusal: () => ApiError): void {
  if (!allowed) throw refusal();
  const s = scope.getStore();
  if (s) s.mayReadBody = true;
}

/**
 * For capability URLs (one-time upload URLs): the secret in the path is the credential, checked
 * by the service as it claims the upload, so the body stream may be handed over as it is.
 */
export function capabilityUrl(): void {
  const s = scope.getStore();
  if (s) s.mayReadBody = true;
}

/** A handler read a body before deciding who may act: a bug, answered as an internal error. */
export class BodyReadBeforeAuthorizationError extends Error {
  constructor() {
    super('a request body was read before the request was authorized; authorize (a service require or "for update" call) first');
    this.name = 'BodyReadBeforeAuthorizationError';
  }
}

export function assertMayReadBody(): void {
  if (!scope.getStore()?.mayReadBody) throw new BodyReadBeforeAuthorizationError();
}
