import { ApiError } from './errors.js';

/** A pod's container-independent storage: its persistent volume and the network volumes it mounts. */
interface PersistentMount {
  size: number;
  path: string;
}

interface NetworkMount {
  volumeId: string;
  path: string;
}

export interface Mounts {
  persistent?: PersistentMount;
  network?: NetworkMount[];
}

/** The container's system folders: a volume there would hide or replace what the container itself needs. */
const SYSTEM_FOLDERS = new Set(['proc', 'sys', 'dev']);

/**
 * Why `path` cannot be where a volume is mounted, or null when it can: it must be absolute, not
 * `/` and not `/proc`, `/sys`, `/dev` or anything under them, however spelled (`//proc/`, `/./dev`);
 * a path with a `..` segment is refused outright rather than resolved.
 */
export function mountPathRefusal(path: string): string | null {
  if (!path.startsWith('/')) return 'it must be an absolute path (starting with "/")';
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) return 'it must not contain ".." segments';
  if (segments.length === 0) return 'a volume cannot be mounted over the root of the container ("/")';
  if (SYSTEM_FOLDERS.has(segments[0]!))
    return `a volume cannot be mounted at /${segments[0]} or under it (/, /proc, /sys and /dev are the container's own)`;
  return null;
}

/** @throws ApiError MOUNT_RULE (400) naming `field` when {@link mountPathRefusal} refuses `path`. */
export function checkMountPath(field: string, path: string): void {
  const why = mountPathRefusal(path);
  if (why !== null)
    throw new ApiError(
      'MOUNT_RULE',
      `${field} ${JSON.stringify(path.slice(0, 200))} is not a mount path a volume may have: ${why}.`,
    );
}

/** Every mount path of `mounts`, each under the field that carries it. */
export function checkMountPaths(mounts: Mounts): void {
  if (mounts.persistent) checkMountPath('mounts.persistent.path (volumeMountPath)', mounts.persistent.path);
  mounts.network?.forEach((m, i) => checkMountPath(`mounts.network.${i}.path (volumeMountPath)`, m.path));
}
