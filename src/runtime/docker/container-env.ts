import type { Host } from '../../domain/catalog.js';
import type { InstanceSpec } from '../runtime.js';

/**
 * The GPUs of an instance as the host's drivers name them: each index's UUID when discovery
 * found one (`GPU-…`), else the index itself.
 */
export const gpuDeviceIds = (spec: Pick<InstanceSpec, 'gpuIndices'>, host: Pick<Host, 'gpuUuids'>): string[] =>
  spec.gpuIndices.map((index) => host.gpuUuids?.[index] ?? String(index));

/**
 * The environment of a container. Later layers win: the tenant's env, then the platform's
 * (`spec.platformEnv`), then the runtime's own variables — identity, GPUs and ports are not for
 * the tenant to override. The image's own `ENV` lies beneath all three (the engine's rule).
 *
 * Runtime variables:
 * - `GANTRY_INSTANCE_ID`, `RUNPOD_POD_ID`: the instance id; `RUNPOD_PUBLIC_IP`: the host's public IP.
 * - `CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES`: the assigned GPUs (their UUIDs when known).
 *   A CPU instance gets `CUDA_VISIBLE_DEVICES=""` and `NVIDIA_VISIBLE_DEVICES=none`, so an image
 *   that sets `NVIDIA_VISIBLE_DEVICES=all` (the CUDA base images do) sees no GPU on a host whose
 *   default runtime is NVIDIA's.
 * - `RUNPOD_GPU_COUNT`, `RUNPOD_CPU_COUNT` (vCPUs).
 * - Ports: per binding `GANTRY_PORT_<private>=<public>`, and for tcp bindings
 *   `RUNPOD_TCP_PORT_<private>=<public>` (a container listens on the private port; the public one
 *   is what a client outside dials). The first binding of a private port wins.
 *
 * One small function, so the shared `platformInstanceEnv()` (instance-env.ts) can replace it.
 */
export function containerEnv(spec: InstanceSpec, host: Pick<Host, 'publicIp' | 'gpuUuids'>): Record<string, string> {
  const env: Record<string, string> = { ...spec.env, ...spec.platformEnv };
  const gpus = gpuDeviceIds(spec, host).join(',');
  Object.assign(env, {
    GANTRY_INSTANCE_ID: spec.id,
    RUNPOD_POD_ID: spec.id,
    RUNPOD_PUBLIC_IP: host.publicIp,
    CUDA_VISIBLE_DEVICES: gpus,
    NVIDIA_VISIBLE_DEVICES: gpus === '' ? 'none' : gpus,
    RUNPOD_GPU_COUNT: String(spec.gpuIndices.length),
    RUNPOD_CPU_COUNT: String(spec.vcpus),
  });
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
  return env;
}
