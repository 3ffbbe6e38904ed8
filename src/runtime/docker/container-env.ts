import type { Host } from '../../domain/catalog.js';
import { layeredInstanceEnv } from '../instance-env.js';
import type { InstanceSpec } from '../runtime.js';

/**
 * The GPUs of an instance as the host's drivers name them: each index's UUID when discovery
 * found one (`GPU-…`), else the index itself.
 */
export const gpuDeviceIds = (spec: Pick<InstanceSpec, 'gpuIndices'>, host: Pick<Host, 'gpuUuids'>): string[] =>
  spec.gpuIndices.map((index) => host.gpuUuids?.[index] ?? String(index));

/**
 * The environment of a container: the shared layering (instance-env.ts) — the tenant's env, then
 * the platform's, then the runtime's own variables — with the host's public IP and the GPUs by
 * UUID. The image's own `ENV` lies beneath all three (the engine's rule). A CPU instance gets
 * `NVIDIA_VISIBLE_DEVICES=none`, so an image that sets `NVIDIA_VISIBLE_DEVICES=all` (the CUDA base
 * images do) sees no GPU on a host whose default runtime is NVIDIA's.
 */
export function containerEnv(spec: InstanceSpec, host: Pick<Host, 'publicIp' | 'gpuUuids'>): Record<string, string> {
  return layeredInstanceEnv(spec, { publicIp: host.publicIp, gpuDevices: gpuDeviceIds(spec, host) });
}
