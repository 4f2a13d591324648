import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { extractModule, firstParagraph, type ParsedFile } from './extract.js';
import { emptyContents, type ModuleContents } from './model.js';

export { emptyContents, type ModuleContents } from './model.js';
export { firstParagraph } from './extract.js';

/** Where a file belongs: the root, a submodule (modules/x) or an example (examples/x). */
function directoryOf(path: string): { dir: string; file: string } | null {
  const parts = path.replace(/\/+$/, '').split('/');
  if (parts.length === 1) return { dir: '', file: parts[0]! };
  if (parts.length === 3 && (parts[0] === 'modules' || parts[0] === 'examples')) return { dir: `${parts[0]}/${parts[1]}`, file: parts[2]! };
  return null;
}

const isReadme = (file: string) => /^readme(\.md|\.markdown)?$/i.test(file);

/** The files inspection reads: .tf files and READMEs of the root, submodules and examples. */
export function wantedForInspection(path: string): boolean {
  const d = directoryOf(path);
  return d !== null && (d.file.endsWith('.tf') || isReadme(d.file));
}

export interface InspectLimits {
  timeoutMs: number;
  maxHeapMb: number;
}

export interface InspectResult {
  contents: ModuleContents;
  warnings: string[];
  /** The root README's first paragraph, for a description when the publisher gave none. */
  summary: string;
}

// The worker's code is inline so it runs the same from TypeScript sources and compiled output.
// It parses with HashiCorp's HCL2 parser compiled to WebAssembly, in a thread whose time and heap
// the parent bounds, so a hostile file can only exhaust that thread.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { parse } = require(workerData.parserPath);
(async () => {
  const results = [];
  for (const f of workerData.files) {
    try {
      results.push({ path: f.path, parsed: await parse(f.path, f.content) });
    } catch (err) {
      results.push({ path: f.path, error: String((err && err.message) || err).slice(0, 1000) });
    }
  }
  parentPort.postMessage(results);
})();
`;
const parserPath = createRequire(import.meta.url).resolve('@cdktn/hcl2json');

type ParseResult = { path: string; parsed?: ParsedFile; error?: string }[];

function parseInWorker(files: { path: string; content: string }[], limits: InspectLimits): Promise<ParseResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { files, parserPath },
      resourceLimits: { maxOldGenerationSizeMb: limits.maxHeapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 8 },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(() => finish(() => reject(new Error(`inspection took longer than ${limits.timeoutMs} ms and was stopped`))), limits.timeoutMs);
    worker.once('message', (m: ParseResult) => finish(() => resolve(m)));
    worker.once('error', (err) => finish(() => reject(new Error(`inspection failed: ${err.message}`))));
    worker.once('exit', (code) => finish(() => reject(new Error(`inspection stopped unexpectedly (exit ${code})`))));
  });
}

/**
 * Turns the collected files of one archive into the module's interface. Never throws: every
 * problem (broken HCL, a crash or time-out of the parser) becomes a warning, and the version
 * stays publishable with whatever could be read.
 */
export async function inspectFiles(collected: Map<string, Buffer>, limits: InspectLimits, warnings: string[] = []): Promise<InspectResult> {
  const dirs = new Map<string, { tf: { path: string; content: string }[]; readme: string }>();
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for (const [path, bytes] of collected) {
    const d = directoryOf(path);
    if (!d) continue;
    const entry = dirs.get(d.dir) ?? { tf: [], readme: '' };
    dirs.set(d.dir, entry);
    let text: string;
    try {
      if (bytes.includes(0)) throw new Error('binary');
      text = decoder.decode(bytes);
    } catch {
      warnings.push(`${path} is not UTF-8 text; it was not read`);
      continue;
    }
    if (isReadme(d.file)) entry.readme ||= text;
    else entry.tf.push({ path, content: text });
  }

  const parsedByPath = new Map<string, ParsedFile>();
  const allTf = [...dirs.values()].flatMap((d) => d.tf);
  if (allTf.length > 0) {
    try {
      for (const r of await parseInWorker(allTf, limits)) {
        if (r.parsed) parsedByPath.set(r.path, r.parsed);
        else warnings.push(`${r.path}: ${r.error ?? 'could not be parsed'}`);
      }
    } catch (err) {
      warnings.push((err as Error).message);
    }
  }

  const contents = emptyContents();
  const warn = (m: string) => warnings.push(m);
  for (const [dir, d] of [...dirs.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const parsed = d.tf.map((f) => parsedByPath.get(f.path)).filter((p): p is ParsedFile => p !== undefined);
    const info = extractModule(dir, parsed, d.readme, warn);
    info.empty = d.tf.length === 0;
    if (dir === '') contents.root = info;
    else if (dir.startsWith('modules/')) contents.submodules.push(info);
    else contents.examples.push(info);
  }
  return { contents, warnings, summary: firstParagraph(contents.root.readme) };
}
