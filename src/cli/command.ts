// The command table's shape and what every command gets to run with.
import type { Api } from './client.js';
import type { Env } from './tfconfig.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Shown in --help: what it does (and its default). */
  description: string;
  /** A placeholder for the value in --help, e.g. <org>. */
  value?: string;
  /** Values the shell completion offers. */
  choices?: string[];
}

export interface Parsed {
  positionals: string[];
  values: Record<string, string | boolean | string[] | undefined>;
}

export interface Ctx {
  env: Env;
  json: boolean;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (on: boolean) => unknown };
  out(line?: string): void;
  err(line?: string): void;
  /** Connects to the host chosen by --host / TERRACE_HOST / the last login (once). */
  api(): Promise<Api>;
  /** Prints a value as JSON (with --json) or runs the human rendering. */
  emit(value: unknown, human: () => void): void;
}

export interface Command {
  /** One or two words: "publish", "orgs list". */
  name: string;
  summary: string;
  /** The positional arguments as shown in usage, e.g. "<org>". */
  args?: string;
  minArgs?: number;
  maxArgs?: number;
  options?: Record<string, OptionSpec>;
  /** Longer help: examples and notes. */
  details?: string;
  run(ctx: Ctx, p: Parsed): Promise<number | void>;
}

export const str = (p: Parsed, k: string): string | undefined => {
  const v = p.values[k];
  return typeof v === 'string' ? v : undefined;
};
export const bool = (p: Parsed, k: string): boolean => p.values[k] === true;
export const list = (p: Parsed, k: string): string[] => {
  const v = p.values[k];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
};
