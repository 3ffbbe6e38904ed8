import type { InstanceSpec } from '../runtime.js';

/** Host variables a child keeps; everything else of the server's own environment stays private. */
export const HOST_ENV_KEYS = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'] as const;

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
 * then the tenant's env (`spec.env`, screened by the caller), then the platform's (`spec.platformEnv`,
 * set by the pod and worker specs), then the runtime's own variables below — identity, GPUs and
 * ports are not for the user to override (the orphan reaper trusts `GANTRY_INSTANCE_ID`).
 *
 * Platform variables:
 * - `GANTRY_INSTANCE_ID`, `RUNPOD_POD_ID`: the instance id.
 * - `GANTRY_INSTANCE_DIR`: the instance's scratch folder (also the default working directory).
 * - `CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES`: the assigned GPU indices, comma-joined.
 *   A CPU instance gets `CUDA_VISIBLE_DEVICES=""` (CUDA then sees no device at all, rather than
 *   every GPU of the machine as it would with the variable unset) and `NVIDIA_VISIBLE_DEVICES=none`.
 * - `RUNPOD_GPU_COUNT`, `RUNPOD_CPU_COUNT` (vCPUs), `RUNPOD_PUBLIC_IP` (127.0.0.1).
 * - Ports. A process has no network namespace: it shares the host's, so it must listen on the
 *   *public* port of a binding, not the private one. Hence, per binding, `GANTRY_PORT_<private>=<public>`,
 *   for tcp bindings also `RUNPOD_TCP_PORT_<private>=<public>`, and `PORT=<public of the first binding>`.
 * - Volumes. A process cannot mount: it is told where each volume's folder is instead.
 *   `GANTRY_VOLUME_<n>=<hostPath>` (n counts from 0 in spec order), `GANTRY_VOLUME_PATH` and
 *   `RUNPOD_VOLUME_PATH` = the first network or persistent volume's folder, and
 *   `GANTRY_MOUNTS` = JSON `[{ path, hostPath, kind }]` for programs that want to map paths.
 */
export function instanceEnv(spec: InstanceSpec, ctx: InstanceEnvContext): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of HOST_ENV_KEYS) {
    const value = ctx.hostEnv[key];
    if (value !== undefined) env[key] = value;
  }
  Object.assign(env, ctx.imageEnv ?? {}, spec.env, spec.platformEnv);

  const gpus = spec.gpuIndices.join(',');
  Object.assign(env, {
    GANTRY_INSTANCE_ID: spec.id,
    GANTRY_INSTANCE_DIR: ctx.instanceDir,
    RUNPOD_POD_ID: spec.id,
    CUDA_VISIBLE_DEVICES: gpus,
    NVIDIA_VISIBLE_DEVICES: gpus === '' ? 'none' : gpus,
    RUNPOD_GPU_COUNT: String(spec.gpuIndices.length),
    RUNPOD_CPU_COUNT: String(spec.vcpus),
    RUNPOD_PUBLIC_IP: INSTANCE_PUBLIC_IP,
  });

  // The first binding of a private port wins, as it does for PORT.
  const named = new Set<string>();
  const setPort = (key: string, value: number): void => {
    if (named.has(key)) return;
    named.add(key);
    env[key] = String(value);
  };
  for (const binding of spec.ports) {
    setPort(`GANTRY_PORT_${binding.private}`, binding.public);
    if (binding.protocol === 'tcp') setPort(`RUNPOD_TCP_PORT_${binding.private}`, binding.public);
  }
  const first = spec.ports[0];
  if (first) env.PORT = String(first.public);

  const mounts = spec.volumes.map((volume, n) => ({ path: volume.path, hostPath: ctx.volumeFolders[n] ?? '', kind: volume.kind }));
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
