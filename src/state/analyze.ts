import type { Readable } from 'node:stream';
import Assembler from 'stream-json/assembler.js';
import parser from 'stream-json/parser.js';
import type { Token } from 'stream-json/parser.js';
import { quoteValue } from '../http/errors.js';

/** The state file (or JSON document) is not what it must be; the message says what is wrong. */
export class StateFormatError extends Error {}

/**
 * How deep objects and arrays may nest in a state document (state file, JSON state, JSON outputs).
 * Real states stay far below it (resource attributes and output values a few dozen levels at
 * most); a state nested 20,000 levels deep is an attack on every recursive step after intake.
 * Checked while streaming, so the refusal costs no more than reading to that depth.
 */
export const MAX_STATE_JSON_DEPTH = 256;

const tooDeep = () =>
  new StateFormatError(`it nests objects and arrays deeper than ${MAX_STATE_JSON_DEPTH} levels, the limit Terrace accepts for state documents`);

/**
 * Throws StateFormatError when the JSON text in buf nests deeper than MAX_STATE_JSON_DEPTH. A
 * byte scan without recursion (strings skipped, escapes honoured): run it before JSON.parse or
 * anything else that walks the document recursively.
 */
export function assertJsonDepth(buf: Buffer): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if (inString) {
      if (b === 0x5c) i++; // backslash: skip the escaped byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) {
      if (++depth > MAX_STATE_JSON_DEPTH) throw tooDeep();
    } else if (b === 0x7d || b === 0x5d) depth--;
  }
}

export interface RawOutput {
  name: string;
  value: unknown;
  /** The cty type JSON as the file states it; undefined when absent. */
  type: unknown;
  sensitive: boolean;
}

export interface StateSummary {
  version: unknown;
  serial: unknown;
  lineage: unknown;
  terraformVersion: unknown;
  outputs: RawOutput[];
  /** Instances of managed resources (data sources are not under management). */
  resourceCount: number;
}

type Frame = { kind: 'object'; key: string | null } | { kind: 'array'; index: number };

const VALUE_START = new Set(['startObject', 'startArray', 'stringValue', 'numberValue', 'nullValue', 'trueValue', 'falseValue']);

function scalar(t: Token): unknown {
  switch (t.name) {
    case 'stringValue':
      return t.value;
    case 'numberValue':
      return Number(t.value);
    case 'nullValue':
      return null;
    case 'trueValue':
      return true;
    case 'falseValue':
      return false;
    default:
      return undefined;
  }
}

/** A header value as found: scalars as they are, containers named (they are always wrong there). */
function headerValue(t: Token): unknown {
  if (t.name === 'startObject') return '(an object)';
  if (t.name === 'startArray') return '(an array)';
  return scalar(t);
}

/** Longest string kept when strings are not needed whole (see tokens); longer ones are cut. */
const MAX_KEPT_STRING = 64 * 1024;

/**
 * The document's tokens. With packStrings (what the assembler needs) every string arrives whole;
 * without, strings stream through the parser and are handed on as stringValue cut at
 * MAX_KEPT_STRING characters, so a 60 MB string value costs 64 KB of memory instead of 60 MB.
 */
async function* tokens(body: Readable, packStrings = true): AsyncIterable<Token> {
  const p = packStrings
    ? parser.asStream({ packValues: true, streamValues: false })
    : parser.asStream({ packKeys: true, packNumbers: true, packStrings: false, streamKeys: false, streamNumbers: false, streamStrings: true });
  body.on('error', (err) => p.destroy(err));
  body.pipe(p);
  let text: string | null = null;
  for await (const t of p as AsyncIterable<Token>) {
    if (packStrings) yield t;
    else if (t.name === 'startString') text = '';
    else if (t.name === 'stringChunk') {
      if (text !== null && text.length < MAX_KEPT_STRING) text += (t.value as string).slice(0, MAX_KEPT_STRING - text.length);
    } else if (t.name === 'endString') {
      yield { name: 'stringValue', value: text ?? '' } as Token;
      text = null;
    } else yield t;
  }
}

function parseFailure(err: unknown): StateFormatError {
  if (err instanceof StateFormatError) return err;
  return new StateFormatError(`it is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
}

/**
 * Reads a Terraform state file (format 4) as a stream: header fields and the root outputs are
 * assembled, resources are only counted, so a large state never sits in memory whole. Throws
 * StateFormatError for anything that is not a JSON object of that shape; header values are
 * returned as found and checked by the caller.
 */
export async function analyzeState(body: Readable, opts: { outputValues?: boolean } = {}): Promise<StateSummary> {
  // Intake needs only the header and a well-formed file: without outputValues the outputs are
  // checked as they stream by (each an object, "sensitive" a boolean) and never assembled, so a
  // state with a 60 MB output costs no more memory to accept than a small one.
  const assemble = opts.outputValues !== false;
  const out: StateSummary = { version: undefined, serial: undefined, lineage: undefined, terraformVersion: undefined, outputs: [], resourceCount: 0 };
  const stack: Frame[] = [];
  let sawRoot = false;
  // Outputs: an assembler takes every token of the outputs object.
  let asm: Assembler | null = null;
  // Resources: the mode and instance count of the resource being read.
  let resMode: unknown;
  let resInstances = 0;
  // Nesting of the whole document, outputs included (the assembler's values are walked later).
  let nesting = 0;

  try {
    for await (const t of tokens(body, assemble)) {
      if (t.name === 'startObject' || t.name === 'startArray') {
        if (++nesting > MAX_STATE_JSON_DEPTH) throw tooDeep();
      } else if (t.name === 'endObject' || t.name === 'endArray') nesting--;
      if (asm) {
        asm.consume(t);
        if (asm.done) {
          const v = asm.current;
          asm = null;
          if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new StateFormatError('"outputs" must be an object');
          out.outputs = Object.entries(v as Record<string, unknown>).map(([name, o]) => {
            if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new StateFormatError(`output ${quoteValue(name)} must be an object`);
            const rec = o as Record<string, unknown>;
            if (rec.sensitive !== undefined && typeof rec.sensitive !== 'boolean') {
              throw new StateFormatError(`output ${quoteValue(name)}: "sensitive" must be true or false`);
            }
            return { name, value: rec.value === undefined ? null : rec.value, type: rec.type, sensitive: rec.sensitive === true };
          });
          // The assembler ate the object's closing token: the value is complete at this level.
        }
        continue;
      }

      if (t.name === 'keyValue') {
        const top = stack[stack.length - 1];
        if (top?.kind === 'object') top.key = t.value;
        continue;
      }
      if (t.name === 'endObject' || t.name === 'endArray') {
        stack.pop();
        // Leaving a resource object (path resources/i).
        if (t.name === 'endObject' && stack.length === 2 && isResources(stack)) {
          if (resMode === 'managed') out.resourceCount += resInstances;
          resMode = undefined;
          resInstances = 0;
        }
        continue;
      }
      if (!VALUE_START.has(t.name)) continue;

      // A value begins: where is it?
      const parent = stack[stack.length - 1];
      if (parent?.kind === 'array') parent.index++;
      const depth = stack.length;
      if (depth === 0) {
        if (sawRoot) throw new StateFormatError('it holds more than one JSON value');
        sawRoot = true;
        if (t.name !== 'startObject') throw new StateFormatError('it must be a JSON object');
      } else if (depth === 1) {
        const key = (parent as { key: string | null }).key;
        if (key === 'version') out.version = headerValue(t);
        else if (key === 'serial') out.serial = headerValue(t);
        else if (key === 'lineage') out.lineage = headerValue(t);
        else if (key === 'terraform_version') out.terraformVersion = headerValue(t);
        else if (key === 'outputs') {
          if (t.name !== 'startObject') throw new StateFormatError('"outputs" must be an object');
          if (assemble) {
            asm = new Assembler();
            asm.consume(t);
            continue;
          }
        } else if (key === 'resources' && t.name !== 'startArray' && t.name !== 'nullValue') {
          throw new StateFormatError('"resources" must be an array');
        }
      } else if (depth === 2 && isOutputs(stack)) {
        const name = (parent as { key: string | null }).key;
        if (t.name !== 'startObject') throw new StateFormatError(`output ${quoteValue(name)} must be an object`);
      } else if (depth === 3 && isOutputs(stack) && (parent as { key: string | null }).key === 'sensitive') {
        if (t.name !== 'trueValue' && t.name !== 'falseValue') {
          throw new StateFormatError(`output ${quoteValue((stack[1] as { key: string | null }).key)}: "sensitive" must be true or false`);
        }
      } else if (depth === 2 && isResources(stack)) {
        if (t.name !== 'startObject') throw new StateFormatError('each element of "resources" must be an object');
      } else if (depth === 3 && isResources(stack)) {
        const key = (parent as { key: string | null }).key;
        if (key === 'mode') resMode = scalar(t);
        else if (key === 'instances' && t.name !== 'startArray') throw new StateFormatError('"instances" of a resource must be an array');
      } else if (depth === 4 && isResources(stack) && (stack[2] as { key: string | null }).key === 'instances') {
        resInstances++;
      }

      if (t.name === 'startObject') stack.push({ kind: 'object', key: null });
      else if (t.name === 'startArray') stack.push({ kind: 'array', index: -1 });
    }
  } catch (err) {
    throw parseFailure(err);
  }
  if (!sawRoot) throw new StateFormatError('it is empty');
  if (asm || stack.length) throw new StateFormatError('it ends before the JSON is complete');
  return out;
}

function isOutputs(stack: Frame[]): boolean {
  const root = stack[0];
  return root?.kind === 'object' && root.key === 'outputs';
}

function isResources(stack: Frame[]): boolean {
  const root = stack[0];
  return root?.kind === 'object' && root.key === 'resources';
}

/** Streams a JSON document through the parser and checks that it is one JSON object. */
export async function assertJsonObject(body: Readable): Promise<void> {
  let depth = 0;
  let sawRoot = false;
  try {
    for await (const t of tokens(body, false)) {
      if (depth === 0 && VALUE_START.has(t.name)) {
        if (sawRoot) throw new StateFormatError('it holds more than one JSON value');
        sawRoot = true;
        if (t.name !== 'startObject') throw new StateFormatError('it must be a JSON object');
      }
      if (t.name === 'startObject' || t.name === 'startArray') {
        if (++depth > MAX_STATE_JSON_DEPTH) throw tooDeep();
      } else if (t.name === 'endObject' || t.name === 'endArray') depth--;
    }
  } catch (err) {
    throw parseFailure(err);
  }
  if (!sawRoot) throw new StateFormatError('it is empty');
  if (depth !== 0) throw new StateFormatError('it ends before the JSON is complete');
}

const MAX_LINEAGE_CHARS = 1024;

export interface StateHeader {
  version: 4;
  serial: number;
  lineage: string;
  terraformVersion: string | null;
}

/** The header rules every stored state meets. Only format 4 (Terraform 0.12 and later) is accepted. */
export function checkHeader(s: StateSummary): StateHeader {
  if (s.version === undefined) throw new StateFormatError('it has no "version": it is not a Terraform state file');
  if (s.version !== 4) {
    throw new StateFormatError(
      `its format version is ${quoteValue(s.version)}; only version 4 (written by Terraform 0.12 and later) is accepted — run any Terraform command with 0.12 or later to upgrade it`,
    );
  }
  if (typeof s.serial !== 'number' || !Number.isSafeInteger(s.serial) || s.serial < 0) {
    throw new StateFormatError('its "serial" must be a non-negative whole number');
  }
  if (typeof s.lineage !== 'string' || s.lineage === '') throw new StateFormatError('its "lineage" must be a non-empty string');
  // Terraform writes a UUID; the bound also keeps a cut-off string (see tokens) from passing.
  if (s.lineage.length > MAX_LINEAGE_CHARS) throw new StateFormatError(`its "lineage" is longer than ${MAX_LINEAGE_CHARS} characters`);
  if (s.terraformVersion !== undefined && typeof s.terraformVersion !== 'string') {
    throw new StateFormatError('its "terraform_version" must be a string');
  }
  return { version: 4, serial: s.serial, lineage: s.lineage, terraformVersion: (s.terraformVersion as string | undefined) ?? null };
}
