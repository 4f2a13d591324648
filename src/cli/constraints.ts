// Terraform's version constraint syntax ("~> 1.2", ">= 1.0, < 2.0", "!= 1.3.0"), which differs
// from npm's ranges: ~> bumps the second-to-last given part, and pre-releases match only exactly.
import semver from 'semver';
import { usageError } from './errors.js';

type Clause = (v: string) => boolean;

function parseClause(raw: string): Clause {
  const m = /^\s*(=|!=|>=|<=|>|<|~>)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(-[0-9A-Za-z.-]+)?\s*$/.exec(raw);
  if (!m) throw usageError(`"${raw.trim()}" is not a version constraint`, 'use Terraform\'s syntax, e.g. "~> 1.2" or ">= 1.0, < 2.0"');
  const [, op = '=', maj, min, pat, pre = ''] = m;
  const given = [min, pat].filter((x) => x !== undefined).length + 1;
  const base = `${maj}.${min ?? 0}.${pat ?? 0}${pre}`;
  switch (op) {
    case '=': return (v) => semver.eq(v, base);
    case '!=': return (v) => !semver.eq(v, base);
    case '>': return (v) => semver.gt(v, base);
    case '>=': return (v) => semver.gte(v, base);
    case '<': return (v) => semver.lt(v, base);
    case '<=': return (v) => semver.lte(v, base);
    default: {
      // ~> 1 and ~> 1.2 allow up to the next major; ~> 1.2.3 up to the next minor.
      const upper = given === 3 ? `${maj}.${Number(min) + 1}.0-0` : `${Number(maj) + 1}.0.0-0`;
      return (v) => semver.gte(v, base) && semver.lt(v, upper);
    }
  }
}

/** A matcher for a constraint string; pre-release versions match only a clause naming them exactly. */
export function versionMatcher(constraint: string | undefined): (v: string) => boolean {
  if (!constraint || constraint.trim() === '') return () => true;
  const parts = constraint.split(',');
  const clauses = parts.map(parseClause);
  const exact = new Set(parts.map((p) => /^\s*=?\s*v?([0-9][^\s,]*)\s*$/.exec(p)?.[1]).filter((x): x is string => !!x && x.includes('-')));
  return (v) => {
    if (!semver.valid(v)) return false;
    if (semver.prerelease(v) && !exact.has(v)) return false;
    return clauses.every((c) => c(v));
  };
}
