import { readFileSync } from 'node:fs';

/**
 * The package's version, and the commit it was built from when the build knew it
 * (`dist/build-info.json`, written by scripts/bundle.mjs). package.json and dist/ are two folders
 * above this module in the sources (src/cli), the compiled tree (dist/cli) and the bundle (dist/bundle).
 */
export function versionText(): string {
  const read = (path: string): Record<string, unknown> | null => {
    try {
      return JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as Record<string, unknown>;
    } catch {
      return null;
    }
  };
  const version = read('../../package.json')?.version;
  const commit = read('../../dist/build-info.json')?.commit;
  return `gantry ${typeof version === 'string' ? version : 'unknown'}${typeof commit === 'string' ? ` (${commit})` : ''}`;
}
