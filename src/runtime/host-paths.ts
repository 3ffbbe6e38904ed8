/**
 * Engine messages, cleaned of the host's paths before a tenant sees them. A container engine words
 * its errors for the operator: `error mounting "/var/lib/docker/volumes/x/_data" to rootfs at
 * "/etc/hosts"`, `lstat /var/lib/docker/overlay2/<id>/merged/bin/x: not a directory`. Those reach
 * tenants as a pod's `statusReason`, its `ERROR:` log line, a worker's health. The host's paths
 * (the engine's data root, its exec roots, layer and volume folders) tell a tenant how the host is
 * laid out and are no use to them; the paths inside the container are the tenant's own and say
 * what went wrong. So a path is rewritten when it is the host's:
 * - inside a container's root filesystem (`…/overlay2/<id>/merged/bin/x`, `…/<id>/rootfs/bin/x`):
 *   the path the container sees (`/bin/x`);
 * - inside a volume's folder (`…/volumes/<name>/_data/sub`): `<volume>/sub`;
 * - under one of the roots given or the engines' default roots, or with a 64-hex (container, layer)
 *   id as a segment: `<host path>`.
 * Every other path (`/etc/hosts`, `/nope` of `exec: "/nope": stat /nope: no such file`) is kept.
 * The operator's log keeps the message as the engine said it.
 */

/** Where Docker and containerd keep their state by default. */
const DEFAULT_HOST_ROOTS = [
  '/var/lib/docker',
  '/var/lib/containerd',
  '/run/docker',
  '/var/run/docker',
  '/run/containerd',
  '/var/run/containerd',
  '/run/runc',
  '/var/run/runc',
];

/** An absolute path in running text: a `/` not inside a word, up to a space, quote, colon or bracket. */
const PATH = /(?<![\w.~%+-])\/[^\s"'`:,;()<>[\]{}|]*/g;
/** A storage driver's folder of one container's root filesystem, and the path inside it. */
const ROOTFS =
  /\/(?:overlay2?|fuse-overlayfs|aufs\/mnt|btrfs\/subvolumes|zfs\/graph|vfs\/dir)\/[0-9a-f]{12,}(?:-init)?\/merged(\/.*)?$|\/[0-9a-f]{64}\/rootfs(\/.*)?$/;
const VOLUME = /\/volumes\/[^/]+\/_data(\/.*)?$/;
const ID_SEGMENT = /\/[0-9a-f]{64}(?:-init)?(?:\/|$)/;

const HIDDEN_HOST_PATH = '<host path>';

/**
 * `text` with the host's absolute paths rewritten (see the top of this file). `roots`: folders of
 * this host to hide besides the defaults (the engine's data root).
 */
export function hideHostPaths(text: string, roots: readonly string[] = []): string {
  const hidden = [...roots.filter((r) => r.startsWith('/') && r.length > 1), ...DEFAULT_HOST_ROOTS].map((r) =>
    r.replace(/\/+$/, ''),
  );
  return text.replace(PATH, (token) => {
    // A sentence's full stop is not part of the path.
    const end = /\.+$/.exec(token)?.[0] ?? '';
    const raw = token.slice(0, token.length - end.length);
    const path = raw.replace(/^\/+/, '/');
    if (path === '/') return token;
    const inside = ROOTFS.exec(path);
    if (inside) return (inside[1] ?? inside[2] ?? '/') + end;
    const volume = VOLUME.exec(path);
    if (volume) return `<volume>${volume[1] ?? ''}${end}`;
    if (ID_SEGMENT.test(path) || hidden.some((r) => path === r || path.startsWith(`${r}/`)))
      return HIDDEN_HOST_PATH + end;
    return token;
  });
}
