/**
 * The data dir holds the database (pod env, Jupyter passwords, job inputs, registry credentials,
 * webhook tokens), the secret key and every instance's folder: no other local user may read it.
 * Gantry creates its folders 0700 and its files 0600 (whatever the umask), and tightens a data dir
 * an older version left 0755/0644 when it starts.
 */
import { chmodSync, lstatSync, readdirSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';

/** Folders Gantry creates in the data dir. */
export const DIR_MODE = 0o700;
/** Files Gantry creates in the data dir. */
export const FILE_MODE = 0o600;

/**
 * Folders whose children are per-instance folders, and what inside each child is Gantry's:
 * instances/<id>/{output.log, output.log.1, pid} are the server's logs and pid files;
 * pods/<id>/persistent and volumes/<id> hold tenant data, whose contents the tenant's processes own.
 */
const NESTED: ReadonlyMap<string, (childDir: string) => string[]> = new Map([
  ['instances', (dir: string) => readdirSync(dir).map((name) => join(dir, name))],
  ['pods', (dir: string) => [join(dir, 'persistent')]],
  ['volumes', () => []],
]);

/**
 * Takes group and other permissions off the data dir, its files, its folders and the files of its
 * instance folders (not the contents of volumes: the closed data dir already hides them, and a
 * volume may be large). Symbolic links are skipped: chmod follows them, and an instance's process
 * may have planted one. Answers the paths it changed.
 */
export function tightenDataDir(dataDir: string): string[] {
  const changed: string[] = [];
  // The data dir itself is the operator's choice and may be a link; below it, links are skipped.
  const tighten = (path: string, follow = false): Stats | null => {
    let stats: Stats;
    try {
      stats = follow ? statSync(path) : lstatSync(path);
    } catch {
      return null;
    }
    if (stats.isSymbolicLink()) return null;
    if ((stats.mode & 0o077) !== 0) {
      try {
        chmodSync(path, stats.mode & 0o7700);
        changed.push(path);
      } catch {
        // not ours (EPERM): nothing this process can do about it
      }
    }
    return stats;
  };
  const children = (dir: string): string[] => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  if (!tighten(dataDir, true)?.isDirectory()) return changed;
  for (const name of children(dataDir)) {
    const path = join(dataDir, name);
    const stats = tighten(path);
    const inside = NESTED.get(name);
    if (!stats?.isDirectory() || !inside) continue;
    for (const child of children(path)) {
      const childPath = join(path, child);
      if (!tighten(childPath)?.isDirectory()) continue;
      let entries: string[] = [];
      try {
        entries = inside(childPath);
      } catch {
        // went away meanwhile
      }
      for (const entry of entries) tighten(entry);
    }
  }
  return changed;
}
