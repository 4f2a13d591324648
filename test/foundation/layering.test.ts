import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The house rules that a reviewer would otherwise have to remember: SQL lives in stores, not in
 * route files; organizations/ and jobs/ import no domain that depends on them (they react through
 * hooks registered in domains.ts); shared plumbing is not imported from route files.
 */

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

function filesUnder(dir: string): string[] {
  return fs.readdirSync(path.join(SRC, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return filesUnder(rel);
    return /\.tsx?$/.test(e.name) ? [rel] : [];
  });
}

const ALL = filesUnder('.');
const read = (rel: string) => fs.readFileSync(path.join(SRC, rel), 'utf8');
const imports = (rel: string) => [...read(rel).matchAll(/from '(\.{1,2}\/[^']+)'/g)].map((m) => path.join(path.dirname(rel), m[1]!));
const ROUTE_FILE = /(^|\/)(routes|[a-z-]+-routes|api)\.ts$/;

describe('layering', () => {
  it('keeps SQL out of route files', () => {
    const routeFiles = ALL.filter((f) => ROUTE_FILE.test(f));
    expect(routeFiles.length).toBeGreaterThan(5);
    const offenders = routeFiles.filter((f) => /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\bsql`/.test(read(f)));
    expect(offenders).toEqual([]);
  });

  it('imports nothing from route files but the routers themselves', () => {
    const offenders = ALL.filter((f) => f !== 'app.ts').flatMap((f) =>
      imports(f)
        .filter((target) => ROUTE_FILE.test(target.replace(/\.js$/, '.ts')))
        .map((target) => `${f} imports ${target}`),
    );
    expect(offenders).toEqual([]);
  });

  it('lets organizations/ and jobs/ import no domain that depends on them', () => {
    const dependents = ['teams', 'workspaces', 'projects', 'tags', 'state', 'registry', 'ops', 'cli'];
    const offenders = ALL.filter((f) => f.startsWith('organizations/') || f.startsWith('jobs/')).flatMap((f) =>
      imports(f)
        .filter((target) => dependents.includes(target.split(path.sep)[0]!) || (f.startsWith('jobs/') && target.startsWith('organizations')))
        .map((target) => `${f} imports ${target}`),
    );
    expect(offenders).toEqual([]);
  });
});
