/**
 * CUDA version rules (spec 2.2 rule 3). Versions are compared numerically as major then minor,
 * so 12.10 is newer than 12.9. A version is encoded as one integer (`major * 1000 + minor`) so the
 * scheduler's hot path compares numbers instead of parsing strings.
 */

const VERSION = /^(\d+)(?:\.(\d+))?$/;

/** The code of an unknown or unparseable version; it satisfies no constraint. */
const UNKNOWN_CUDA = -1;

/** Parsed codes of the few version strings a fleet and its requests use. */
const codes = new Map<string, number>();

/** `major * 1000 + minor`; a bare major counts as `major.0`; null or malformed → UNKNOWN_CUDA. */
export function cudaCode(version: string | null): number {
  if (version === null) return UNKNOWN_CUDA;
  const known = codes.get(version);
  if (known !== undefined) return known;
  const code = parseCode(version);
  if (codes.size >= 1024) codes.clear();
  codes.set(version, code);
  return code;
}

function parseCode(version: string): number {
  const m = VERSION.exec(version.trim());
  if (!m) return UNKNOWN_CUDA;
  const minor = m[2] === undefined ? 0 : Number(m[2]);
  if (minor >= 1000) return UNKNOWN_CUDA;
  return Number(m[1]) * 1000 + minor;
}

/** Orders version strings oldest first; unknown versions sort last. */
export function compareCudaVersions(a: string, b: string): number {
  const ca = cudaCode(a);
  const cb = cudaCode(b);
  if (ca === cb) return a < b ? -1 : a > b ? 1 : 0;
  if (ca === UNKNOWN_CUDA) return 1;
  if (cb === UNKNOWN_CUDA) return -1;
  return ca - cb;
}

/** A request's CUDA constraint, parsed once. */
export interface CudaRule {
  /** Exact major.minor codes; null = no list constraint. */
  readonly allowed: readonly number[] | null;
  /** Lower bound code; null = no bound. A bare major "12" is 12.0, i.e. any 12.x or newer. */
  readonly min: number | null;
}

export function cudaRule(request: { allowedCudaVersions: readonly string[]; minCudaVersion: string | null }): CudaRule {
  return {
    allowed: request.allowedCudaVersions.length > 0 ? request.allowedCudaVersions.map(cudaCode) : null,
    min: request.minCudaVersion === null ? null : cudaCode(request.minCudaVersion),
  };
}

/** Whether a host reporting `hostCode` satisfies the rule. A host that reports no version satisfies only no constraint. */
export function cudaAccepts(rule: CudaRule, hostCode: number): boolean {
  if (rule.allowed === null && rule.min === null) return true;
  if (hostCode === UNKNOWN_CUDA) return false;
  if (rule.allowed !== null && !rule.allowed.includes(hostCode)) return false;
  if (rule.min !== null && (rule.min === UNKNOWN_CUDA || hostCode < rule.min)) return false;
  return true;
}

/** The constraint in words: `CUDA 13.0`, `CUDA 12.8 or 13.0`, `CUDA 12.4 or newer`. */
export function describeCudaRule(request: {
  allowedCudaVersions: readonly string[];
  minCudaVersion: string | null;
}): string {
  const parts: string[] = [];
  if (request.allowedCudaVersions.length > 0) {
    const list = request.allowedCudaVersions;
    parts.push(`CUDA ${list.length === 1 ? list[0]! : `${list.slice(0, -1).join(', ')} or ${list[list.length - 1]!}`}`);
  }
  if (request.minCudaVersion !== null) {
    const v = request.minCudaVersion.includes('.') ? request.minCudaVersion : `${request.minCudaVersion}.0`;
    parts.push(`CUDA ${v} or newer`);
  }
  return parts.join(' and ');
}
