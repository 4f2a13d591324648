import type { ApiError } from '../http/errors.js';
import { quoteValue, unprocessable } from '../http/errors.js';
import { ApiErrors } from '../http/jsonapi.js';

/** HCP's rule for single-string tags: 1-255 letters, digits, ":", "-" or "_". */
export const TAG_NAME_RE = /^[A-Za-z0-9:_-]{1,255}$/;
export const TAG_NAME_RULE = 'must be 1-255 letters, digits, ":", "-" or "_"';
/** A binding key follows the tag-name rule, since Terraform's cloud block binds list tags as keys with empty values. */
export const BINDING_KEY_RE = TAG_NAME_RE;
/** Values may be empty; they also allow ".", "/", "@", "=", "+" and spaces (versions, paths, addresses). */
export const BINDING_VALUE_RE = /^[A-Za-z0-9:_.\/@=+ -]{0,255}$/;
export const BINDING_VALUE_RULE = 'must be at most 255 letters, digits, spaces or ":_./@=+-" (it may be empty)';
/** How many tags or bindings one request may name. */
export const MAX_TAGS_PER_REQUEST = 100;

export interface TagRefs {
  names: string[];
  ids: string[];
}

export interface Binding {
  key: string;
  value: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function throwAll(errors: ApiError[]): void {
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ApiErrors(errors);
}

function listOf(data: unknown, pointer: string, what: string, allowEmpty: boolean): unknown[] {
  if (!Array.isArray(data)) throw unprocessable(`${what} must be an array`, pointer);
  if (!allowEmpty && data.length === 0) throw unprocessable(`${what} must list at least one item`, pointer);
  if (data.length > MAX_TAGS_PER_REQUEST) throw unprocessable(`${what} may list at most ${MAX_TAGS_PER_REQUEST} items`, pointer);
  return data;
}

/** Validates tag names (the tag-names attribute): each must follow the rule; duplicates collapse. */
export function parseTagNames(names: string[], pointer: string): string[] {
  const errors = names
    .map((n, i) => (TAG_NAME_RE.test(n) ? null : unprocessable(`tag-names[${i}] ${quoteValue(n)} ${TAG_NAME_RULE}`, `${pointer}/${i}`)))
    .filter((e): e is ApiError => e !== null);
  throwAll(errors);
  return [...new Set(names)];
}

/**
 * Tags as go-tfe sends them: `[{"type":"tags","id":"tag-…"}]` or `[{"type":"tags","attributes":{"name":"web"}}]`
 * (a full node with an empty id when it names the tag).
 */
export function parseTagRefs(data: unknown, pointer: string, opts: { allowEmpty: boolean }): TagRefs {
  const items = listOf(data, pointer, 'data', opts.allowEmpty);
  const names: string[] = [];
  const ids: string[] = [];
  const errors: ApiError[] = [];
  items.forEach((item, i) => {
    const at = `${pointer}/${i}`;
    if (!isObject(item)) return void errors.push(unprocessable(`data[${i}] must be an object`, at));
    if (item.type !== 'tags') return void errors.push(unprocessable(`data[${i}].type must be "tags", got ${quoteValue(item.type ?? null)}`, `${at}/type`));
    const name = isObject(item.attributes) ? item.attributes.name : undefined;
    if (typeof item.id === 'string' && item.id !== '') ids.push(item.id);
    else if (typeof name === 'string') {
      if (TAG_NAME_RE.test(name)) names.push(name);
      else errors.push(unprocessable(`data[${i}].attributes.name ${quoteValue(name)} ${TAG_NAME_RULE}`, `${at}/attributes/name`));
    } else errors.push(unprocessable(`data[${i}] needs an id ("tag-…") or attributes.name`, at));
  });
  throwAll(errors);
  return { names: [...new Set(names)], ids: [...new Set(ids)] };
}

/** Key/value bindings as go-tfe sends them: `[{"type":"tag-bindings","attributes":{"key":"env","value":"prod"}}]`. */
export function parseBindings(data: unknown, pointer: string, opts: { allowEmpty: boolean }): Binding[] {
  const items = listOf(data, pointer, 'data', opts.allowEmpty);
  const out = new Map<string, string>();
  const errors: ApiError[] = [];
  items.forEach((item, i) => {
    const at = `${pointer}/${i}`;
    if (!isObject(item)) return void errors.push(unprocessable(`data[${i}] must be an object`, at));
    if (item.type !== 'tag-bindings') {
      return void errors.push(unprocessable(`data[${i}].type must be "tag-bindings", got ${quoteValue(item.type ?? null)}`, `${at}/type`));
    }
    const a = isObject(item.attributes) ? item.attributes : {};
    const { key } = a;
    // go-tfe omits an empty value (omitempty): absent means "".
    const value = a.value === undefined || a.value === null ? '' : a.value;
    if (typeof key !== 'string' || !BINDING_KEY_RE.test(key)) {
      return void errors.push(unprocessable(`data[${i}].attributes.key ${key === undefined ? 'is required and' : quoteValue(key)} ${TAG_NAME_RULE}`, `${at}/attributes/key`));
    }
    if (typeof value !== 'string' || !BINDING_VALUE_RE.test(value)) {
      return void errors.push(unprocessable(`data[${i}].attributes.value ${quoteValue(value)} ${BINDING_VALUE_RULE}`, `${at}/attributes/value`));
    }
    if (out.has(key)) return void errors.push(unprocessable(`data[${i}].attributes.key ${quoteValue(key)} is given twice; a key has one value`, `${at}/attributes/key`));
    out.set(key, value);
  });
  throwAll(errors);
  return [...out].map(([key, value]) => ({ key, value }));
}

/** The `data` member of a relationship object in a resource body, when present. */
export function relationshipData(relationships: Record<string, unknown>, name: string): { present: boolean; data: unknown } {
  const rel = relationships[name];
  if (rel === undefined) return { present: false, data: undefined };
  if (!isObject(rel) || !('data' in rel)) throw unprocessable(`relationships.${name} must be an object with a "data" member`, `/data/relationships/${name}`);
  return { present: true, data: rel.data };
}
