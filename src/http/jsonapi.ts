import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError, capErrorText } from './errors.js';

export const JSONAPI_MEDIA_TYPE = 'application/vnd.api+json';

export interface ResourceObject {
  id: string;
  type: string;
  attributes?: Record<string, unknown>;
  relationships?: Record<string, unknown>;
  links?: Record<string, unknown>;
  meta?: Record<string, unknown>;
}

export interface Document {
  data: ResourceObject | ResourceObject[] | null;
  included?: ResourceObject[];
  links?: Record<string, unknown>;
  meta?: Record<string, unknown>;
}

/** Renders a JSON:API document with the JSON:API media type. */
export function jsonApi(c: Context, doc: Document, status: ContentfulStatusCode = 200): Response {
  const body: Document = { data: doc.data };
  if (doc.included && doc.included.length > 0) body.included = doc.included;
  if (doc.links) body.links = doc.links;
  if (doc.meta) body.meta = doc.meta;
  return c.body(JSON.stringify(body), status, { 'Content-Type': JSONAPI_MEDIA_TYPE });
}

/** The JSON:API error body. status is a string: go-tfe's decoder fails on a number. */
export function jsonApiErrorBody(err: ApiError): { errors: Record<string, unknown>[] } {
  // Every string is capped here, whatever a message interpolated (see quoteValue for the rule).
  const e: Record<string, unknown> = { status: String(err.status), title: capErrorText(err.title), detail: capErrorText(err.detail) };
  if (err.source) {
    e.source = Object.fromEntries(Object.entries(err.source).map(([k, v]) => [k, typeof v === 'string' ? capErrorText(v) : v]));
  }
  return { errors: [e] };
}

/** Several validation errors at once, each with its own pointer. */
export class ApiErrors extends ApiError {
  constructor(readonly all: ApiError[]) {
    const first = all[0]!;
    super(first.status, first.title, first.detail, first.source);
  }
}

/** At most this many errors in one body: a body with a million bad members makes a short answer. */
const MAX_ERRORS = 50;

export function jsonApiErrorsBody(err: ApiError): { errors: Record<string, unknown>[] } {
  if (err instanceof ApiErrors) return { errors: err.all.slice(0, MAX_ERRORS).flatMap((e) => jsonApiErrorBody(e).errors) };
  return jsonApiErrorBody(err);
}

/** A to-one relationship object. */
export function toOne(type: string, id: string | null | undefined, related?: string): Record<string, unknown> {
  const rel: Record<string, unknown> = { data: id ? { type, id } : null };
  if (related) rel.links = { related };
  return rel;
}
