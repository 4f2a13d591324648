// Packs a module directory into the .tar.gz Terrace takes: `.terraformignore` honoured with
// Terraform's rules (go-slug's), `.git` and `.terraform` left out, links kept when they stay
// inside the directory (rewritten relative) and refused when they leave it.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import * as tar from 'tar';
import { CliError, EXIT } from './errors.js';

interface Rule { re: RegExp; negated: boolean; negationsAfter: boolean }

/** A .terraformignore pattern as a regular expression over slash-separated relative paths. */
function compile(pattern: string): RegExp {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        i++;
        if (pattern[i + 1] === '/') i++;
        re += i + 1 >= pattern.length ? '.*' : '(.*/)?';
      } else re += '[^/]*';
    } else if (ch === '?') re += '[^/]';
    else if (ch === '\\') re += i + 1 < pattern.length ? `\\${pattern[++i]}` : '\\\\';
    else if ('.$^+(){}|'.includes(ch)) re += `\\${ch}`;
    else re += ch;
  }
  try {
    return new RegExp(`${re}$`);
  } catch {
    throw new CliError(`.terraformignore: the pattern ${JSON.stringify(pattern)} is not valid`, EXIT.usage);
  }
}

// What Terraform leaves out without being told: .git/, .terraform/ but not .terraform/modules/.
const DEFAULTS: Array<[string, boolean]> = [['**/.git/**', false], ['**/.terraform/**', false], ['**/.terraform/modules/**', true]];

export function readIgnoreRules(text: string | null): Rule[] {
  const rules: Rule[] = DEFAULTS.map(([p, negated], i) => ({ re: compile(p), negated, negationsAfter: i < 2 }));
  for (const rawLine of (text ?? '').split(/\r?\n/)) {
    let p = rawLine.trim();
    if (p === '' || p.startsWith('#')) continue;
    let negated = false;
    if (p.startsWith('!')) {
      negated = true;
      p = p.slice(1);
      for (let i = rules.length - 1; i >= 0 && !rules[i]!.negationsAfter; i--) rules[i]!.negationsAfter = true;
    }
    if (p === '') continue;
    if (p.endsWith('/')) p += '**';
    p = p.startsWith('/') ? p.slice(1) : `**/${p}`;
    rules.push({ re: compile(p), negated, negationsAfter: false });
  }
  return rules;
}

/** Whether the path is left out, and whether that holds for everything below it too. */
export function excludes(rules: Rule[], rel: string): { excluded: boolean; dominating: boolean } {
  let excluded = false;
  let dominating = false;
  for (const r of rules) {
    if (r.re.test(rel)) {
      excluded = !r.negated;
      dominating = excluded && !r.negationsAfter;
    }
  }
  return { excluded, dominating };
}

type Entry = { rel: string; kind: 'file' | 'dir' } | { rel: string; kind: 'link'; linkpath: string };

const inside = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

/** The entries to pack, in a stable order, after ignore rules and link checks. */
export function listModuleFiles(dir: string): Entry[] {
  let root: string;
  try {
    root = fs.realpathSync(dir);
    if (!fs.statSync(root).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    throw new CliError(`cannot read the module directory ${dir}: ${(err as Error).message}`, EXIT.usage);
  }
  let ignoreText: string | null = null;
  try {
    ignoreText = fs.readFileSync(path.join(root, '.terraformignore'), 'utf8');
  } catch {
    // no .terraformignore: only the defaults apply
  }
  const rules = readIgnoreRules(ignoreText);
  const out: Entry[] = [];
  const walk = (relDir: string) => {
    const names = fs.readdirSync(path.join(root, relDir)).sort();
    for (const name of names) {
      const rel = relDir ? `${relDir}/${name}` : name;
      const abs = path.join(root, rel);
      const st = fs.lstatSync(abs);
      if (st.isDirectory()) {
        const r = excludes(rules, `${rel}/`);
        if (r.excluded && r.dominating) continue;
        if (!r.excluded) out.push({ rel, kind: 'dir' });
        walk(rel);
        continue;
      }
      if (excludes(rules, rel).excluded) continue;
      if (st.isFile()) out.push({ rel, kind: 'file' });
      else if (st.isSymbolicLink()) {
        const target = fs.readlinkSync(abs);
        let resolved = path.resolve(path.dirname(abs), target);
        try {
          resolved = fs.realpathSync(resolved);
        } catch {
          // a dangling link: judge it by where it points
        }
        if (!inside(root, resolved)) {
          throw new CliError(
            `${rel} is a link to ${target}, outside the module directory; Terraform could not install it`,
            EXIT.failed,
            'replace the link with a copy of what it points to, or leave it out in .terraformignore',
          );
        }
        const relTarget = path.relative(root, resolved).split(path.sep).join('/');
        out.push({ rel, kind: 'link', linkpath: path.posix.relative(path.posix.dirname(rel), relTarget) || '.' });
      } else {
        throw new CliError(`${rel} is neither a file, a directory nor a link (a socket or device?)`, EXIT.failed, 'leave it out in .terraformignore');
      }
    }
  };
  walk('');
  if (!out.some((e) => e.kind === 'file')) {
    throw new CliError(`${dir} has no files to publish (after .terraformignore)`, EXIT.usage, 'point at the module directory, the one holding its .tf files');
  }
  return out;
}

export interface Packed { file: string; size: number; sha256: string; entries: number; cleanup(): void }

/** Writes the module's .tar.gz to a temporary file (uploads need its length, retries its bytes). */
export async function packModule(dir: string): Promise<Packed> {
  const entries = listModuleFiles(dir);
  const root = fs.realpathSync(dir);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-pack-'));
  const file = path.join(tmp, 'module.tar.gz');
  const pack = new tar.Pack({ cwd: root, gzip: true, portable: true, noDirRecurse: true });
  for (const e of entries) {
    if (e.kind !== 'link') {
      pack.write(e.rel);
      continue;
    }
    const link = new tar.ReadEntry(new tar.Header({ path: e.rel, type: 'SymbolicLink', linkpath: e.linkpath, mode: 0o777, size: 0, mtime: new Date(0) }));
    pack.write(link);
    link.end();
  }
  pack.end();
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(
    pack,
    new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        size += chunk.length;
        cb(null, chunk);
      },
    }),
    fs.createWriteStream(file),
  );
  return { file, size, sha256: hash.digest('hex'), entries: entries.length, cleanup: () => fs.rmSync(tmp, { recursive: true, force: true }) };
}
