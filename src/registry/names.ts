import semver from 'semver';

/** Terraform's rules for namespace and name: 1-64 chars, letters/digits, - and _ only inside. */
export const MODULE_NAME_RE = /^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?$/;
/** The provider ("system") segment: lower-case letters and digits only, or Terraform cannot address it. */
export const PROVIDER_RE = /^[0-9a-z]{1,64}$/;

const VERSION_RE = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$/;

/** Full, no "v", no leading zeros: the spelling render() produces. */
const CANONICAL_VERSION_RE = /^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

function render(major: string, minor: string, patch: string, pre?: string, build?: string): string {
  let v = `${BigInt(major)}.${BigInt(minor)}.${BigInt(patch)}`;
  if (pre) v += `-${pre}`;
  if (build) v += `+${build}`;
  return v;
}

/**
 * The canonical spelling of a version being published: full semver, leading "v" dropped,
 * build metadata kept. Returns null when it is not valid semver.
 */
export function canonicalPublishVersion(raw: string): string | null {
  const m = VERSION_RE.exec(raw.trim());
  if (!m || m[2] === undefined || m[3] === undefined) return null;
  // Semver forbids leading zeros; clients would ask for the stripped spelling anyway.
  if ([m[1]!, m[2], m[3]].some((n) => n.length > 1 && n.startsWith('0'))) return null;
  const v = render(m[1]!, m[2], m[3], m[4], m[5]);
  return semver.valid(v) ? v : null;
}

/**
 * The spelling a client asks for at download, normalised as go-version does: "v" dropped,
 * missing minor/patch padded with zeros, leading zeros removed, "+build" kept literally.
 */
export function normalizeRequestedVersion(raw: string): string | null {
  // Already canonical (how Terraform asks, on every download): render() would give it back unchanged.
  if (CANONICAL_VERSION_RE.test(raw)) return raw;
  const m = VERSION_RE.exec(raw);
  if (!m) return null;
  return render(m[1]!, m[2] ?? '0', m[3] ?? '0', m[4], m[5]);
}

/** Highest stable version, or the highest pre-release when there is no stable one. */
export function latestOf(versions: string[]): string | null {
  const valid = versions.filter((v) => semver.valid(v));
  if (valid.length === 0) return null;
  const stable = valid.filter((v) => semver.prerelease(v) === null);
  const pool = stable.length ? stable : valid;
  return pool.reduce((a, b) => (semver.gt(b, a) ? b : a));
}

/** Newest first, by semver precedence. */
export function sortVersionsDesc(versions: string[]): string[] {
  return [...versions].sort((a, b) => semver.rcompare(a, b) || (a < b ? 1 : -1));
}
