import { MAX_STATE_JSON_DEPTH, type RawOutput } from './analyze.js';
import { quoteValue } from '../http/errors.js';

/**
 * The cty type of a JSON value when the state carries none (old or hand-made states): the type
 * Terraform itself would infer, so the value always converts back (`detailed-type` must be set,
 * or Terraform falls back to downloading the whole state).
 */
export function inferCtyType(value: unknown, depth = 0): unknown {
  if (value === null || value === undefined) return 'dynamic';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'bool';
  // Intake bounds nesting (MAX_STATE_JSON_DEPTH); this bound keeps the recursion finite whatever
  // reaches it (a value deeper than that is typed dynamic, which converts back to anything).
  if (depth >= MAX_STATE_JSON_DEPTH) return 'dynamic';
  if (Array.isArray(value)) return ['tuple', value.map((v) => inferCtyType(v, depth + 1))];
  return ['object', Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, inferCtyType(v, depth + 1)]))];
}

function kindOfValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return Array.isArray(value) ? 'array' : 'object';
}

/**
 * HCP's coarse `type`: string, number, boolean, array (list, set, tuple), object (map, object);
 * for "dynamic" (and anything unrecognised) the kind of the value itself, "null" for null.
 */
export function coarseType(ctyType: unknown, value: unknown): string {
  if (ctyType === 'string' || ctyType === 'number') return ctyType;
  if (ctyType === 'bool') return 'boolean';
  if (Array.isArray(ctyType)) {
    const head = ctyType[0];
    if (head === 'list' || head === 'set' || head === 'tuple') return 'array';
    if (head === 'map' || head === 'object') return 'object';
  }
  return kindOfValue(value);
}

/** A plausible cty type JSON: a primitive name or a [kind, …] array (checked shallowly). */
export function isCtyType(t: unknown): boolean {
  if (typeof t === 'string') return ['string', 'number', 'bool', 'dynamic'].includes(t);
  return Array.isArray(t) && typeof t[0] === 'string' && ['list', 'set', 'map', 'tuple', 'object'].includes(t[0]) && t.length >= 2;
}

/**
 * Parses `json-state-outputs` (the outputs of Terraform's JSON state representation:
 * {"name":{"sensitive":bool,"value":…,"type":…}}). Returns a message on bad shape.
 */
export function parseJsonStateOutputs(v: unknown): RawOutput[] | string {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'it must be a JSON object of outputs by name';
  const out: RawOutput[] = [];
  for (const [name, o] of Object.entries(v as Record<string, unknown>)) {
    if (typeof o !== 'object' || o === null || Array.isArray(o)) return `output ${quoteValue(name)} must be an object`;
    const rec = o as Record<string, unknown>;
    if (rec.sensitive !== undefined && typeof rec.sensitive !== 'boolean') return `output ${quoteValue(name)}: "sensitive" must be true or false`;
    if (rec.type !== undefined && !isCtyType(rec.type)) return `output ${quoteValue(name)}: "type" is not a Terraform type`;
    out.push({ name, value: rec.value === undefined ? null : rec.value, type: rec.type, sensitive: rec.sensitive === true });
  }
  return out;
}

export interface ResolvedOutput {
  name: string;
  value: unknown;
  sensitive: boolean;
  type: string;
  detailedType: unknown;
}

/**
 * The outputs to present: json-state-outputs when the client sent them (Terraform's own
 * rendering), else the state's; the detailed type from whichever carries one, else inferred.
 */
export function resolveOutputs(fromState: RawOutput[], fromJson: RawOutput[] | null): ResolvedOutput[] {
  const stateByName = new Map(fromState.map((o) => [o.name, o]));
  return (fromJson ?? fromState).map((o) => {
    const detailedType = [o.type, stateByName.get(o.name)?.type].find(isCtyType) ?? inferCtyType(o.value);
    return {
      name: o.name,
      value: o.value,
      sensitive: o.sensitive || stateByName.get(o.name)?.sensitive === true,
      type: coarseType(detailedType, o.value),
      detailedType,
    };
  });
}
