import { layeredInstanceEnv } from '../instance-env.js';
import type { InstanceSpec } from '../runtime.js';

/** Host variables a child keeps; everything else of the server's own environment stays private. */
const HOST_ENV_KEYS = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'] as const;

/** Where instances reach each other and the host: processes share the host's network. */
export const INSTANCE_PUBLIC_IP = '127.0.0.1';

export interface InstanceEnvContext {
  /** The server's environment; only {@link HOST_ENV_KEYS} are taken from it. */
  hostEnv: Record<string, string | undefined>;
  /** `env` of the image mapping in the config. */
  imageEnv?: Record<string, string> | undefined;
  /** `<dataDir>/instances/<id>` */
  instanceDir: string;
  /** The host folder of each of `spec.volumes`, in the same order (volume-folders.ts). */
  volumeFolders: string[];
}

/**
 * The environment of an instance's process. Later layers win: host basics, then the image's env,
 * then what every runtime sets (`layeredInstanceEnv()`, ../instance-env.ts: the tenant's env —
 * screened by the caller —, the platform's `spec.platformEnv`, the platform's per-instance
 * variables with the GPUs as host indices and 127.0.0.1 as the public IP), then the variables
 * below, which only a process needs.
 *
 * - `GANTRY_INSTANCE_DIR`: the instance's scratch folder (also the default working directory).
 * - `PORT=<public port of the first binding>`. A process has no network namespace: it shares the
 *   host's, so it must listen on the *public* port of a binding, not the private one (also told
 *   by `GANTRY_PORT_<private>`).
 * - Volumes. A process cannot mount: it is told where each volume's folder is instead.
 *   `GANTRY_VOLUME_<n>=<hostPath>` (n counts from 0 in spec order), `GANTRY_VOLUME_PATH` and
 *   `RUNPOD_VOLUME_PATH` = the first network or persistent volume's folder, and
 *   `GANTRY_MOUNTS` = JSON `[{ path, hostPath, kind }]` for programs that want to map paths.
 */
export function instanceEnv(spec: InstanceSpec, ctx: InstanceEnvContext): Record<string, string> {
  const host: Record<string, string> = {};
  for (const key of HOST_ENV_KEYS) {
    const value = ctx.hostEnv[key];
    if (value !== undefined) host[key] = value;
  }
  // Spread, not Object.assign: a tenant's "__proto__" stays a variable rather than a prototype.
  const env: Record<string, string> = {
    ...host,
    ...ctx.imageEnv,
    ...layeredInstanceEnv(spec, { publicIp: INSTANCE_PUBLIC_IP, gpuDevices: spec.gpuIndices.map(String) }),
  };

  env.GANTRY_INSTANCE_DIR = ctx.instanceDir;
  const first = spec.ports[0];
  if (first) env.PORT = String(first.public);

  const mounts = spec.volumes.map((volume, n) => ({
    path: volume.path,
    hostPath: ctx.volumeFolders[n] ?? '',
    kind: volume.kind,
  }));
  mounts.forEach((mount, n) => {
    env[`GANTRY_VOLUME_${n}`] = mount.hostPath;
  });
  const data = mounts[0];
  if (data) {
    env.GANTRY_VOLUME_PATH = data.hostPath;
    env.RUNPOD_VOLUME_PATH = data.hostPath;
  }
  env.GANTRY_MOUNTS = JSON.stringify(mounts);
  return env;
}
