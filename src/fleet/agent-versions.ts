/**
 * Which agent versions a control plane takes at join (docs/fleet.md, "Versions"): the same major
 * version, and a minor version at most one apart either way (0.4 takes 0.3, 0.4 and 0.5 agents;
 * 1.x takes no 0.x). Patch levels and pre-releases never matter. The control plane refuses an
 * agent outside that (409 AGENT_VERSION_UNSUPPORTED, the install command in the detail); the agent
 * checks the control plane's version in the join's answer the same way, so either side that is
 * newer says so. A version that is not `MAJOR.MINOR.PATCH` (a build from a checkout without one
 * says `unknown`) is taken, with a warning from whoever sees it.
 */
import { readFileSync } from 'node:fs';

/** How far apart minor versions of the same major may be. */
const MINOR_SKEW = 1;

function parse(version: string): { major: number; minor: number } | null {
  const m = /^v?(\d{1,6})\.(\d{1,6})\.\d{1,6}(?:[-+][0-9A-Za-z.+-]*)?$/.exec(version);
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : null;
}

export type VersionVerdict = 'compatible' | 'incompatible' | 'unknown';

/** Whether an agent and a control plane of these versions work together. */
export function versionVerdict(agent: string, controlPlane: string): VersionVerdict {
  const a = parse(agent);
  const c = parse(controlPlane);
  if (!a || !c) return 'unknown';
  return a.major === c.major && Math.abs(a.minor - c.minor) <= MINOR_SKEW ? 'compatible' : 'incompatible';
}

/** The sentence either side says when the two are too far apart; `upgrade` is the command that upgrades the agent. */
export function versionSkewMessage(agent: string, controlPlane: string, upgrade: string): string {
  const older = versionVerdict(agent, controlPlane) === 'incompatible' && isOlder(agent, controlPlane);
  return (
    `This agent is version ${agent} and the control plane ${controlPlane}: an agent joins a control plane of the same ` +
    `major version and a minor version at most ${MINOR_SKEW} apart. ` +
    (older
      ? `Upgrade the agent on the host: ${upgrade}`
      : `Upgrade the control plane first, or install the agent it serves: ${upgrade}`)
  );
}

function isOlder(a: string, b: string): boolean {
  const x = parse(a)!;
  const y = parse(b)!;
  return x.major < y.major || (x.major === y.major && x.minor < y.minor);
}

/** The control plane's own version: the package's (package.json two folders up in src/, dist/ and the bundle). */
export function controlPlaneVersion(): string {
  try {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}
