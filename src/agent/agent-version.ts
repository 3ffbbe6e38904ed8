import { readFileSync } from 'node:fs';

/** Set by scripts/build-agent-sea.mjs (esbuild `define`) in the single executable, which has no package.json beside it. */
declare const GANTRY_AGENT_VERSION: string | undefined;

/** This agent's version: the package's (package.json two folders up in src/, dist/ and the bundle), or the one built into the single executable. */
export function agentVersion(): string {
  if (typeof GANTRY_AGENT_VERSION === 'string') return GANTRY_AGENT_VERSION;
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}
