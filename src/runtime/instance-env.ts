/**
 * The variables the platform sets for every instance, whatever runs it: identity, GPUs, CPUs, the
 * public address and the port mapping. Each runtime adds its own on top (the process runtime:
 * process/instance-env.ts; a container runtime: none it must, since a container has its own
 * network and mounts).
 */
import type { InstanceSpec } from './runtime.js';

export interface PlatformInstanceEnvOptions {
  /** Where the instance's public ports are reached from outside: `RUNPOD_PUBLIC_IP`. */
  publicIp: string;
  /**
   * The instance's GPUs as it must name them in `CUDA_VISIBLE_DEVICES` / `NVIDIA_VISIBLE_DEVICES`,
   * one per GPU of `spec.gpuIndices`, in that order: host indices for the process runtime (a process
   * sees every GPU of the machine), device UUIDs for a container runtime. Empty for a CPU instance.
   */
  gpuDevices: readonly string[];
}

/**
 * The platform's own per-instance variables. Nothing of the tenant's or of `spec.platformEnv` may
 * override them: the orphan reaper trusts `GANTRY_INSTANCE_ID`, and GPUs and ports are what
 * placement assigned.
 *
 * - `GANTRY_INSTANCE_ID`, `RUNPOD_POD_ID`: the instance id.
 * - `CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES`: `gpuDevices`, comma-joined. A CPU instance
 *   gets `CUDA_VISIBLE_DEVICES=""` (CUDA then sees no device at all, rather than every GPU of the
 *   machine as it would with the variable unset) and `NVIDIA_VISIBLE_DEVICES=none`.
 * - `RUNPOD_GPU_COUNT` (the number of `gpuDevices`), `RUNPOD_CPU_COUNT` (vCPUs), `RUNPOD_PUBLIC_IP`.
 * - Per port binding `GANTRY_PORT_<private>=<public>`, and for a tcp binding also
 *   `RUNPOD_TCP_PORT_<private>=<public>`; when a private port is bound twice, its first binding wins.
 */
export function platformInstanceEnv(spec: InstanceSpec, options: PlatformInstanceEnvOptions): Record<string, string> {
  const gpus = options.gpuDevices.join(',');
  const env: Record<string, string> = {
    GANTRY_INSTANCE_ID: spec.id,
    RUNPOD_POD_ID: spec.id,
    CUDA_VISIBLE_DEVICES: gpus,
    NVIDIA_VISIBLE_DEVICES: gpus === '' ? 'none' : gpus,
    RUNPOD_GPU_COUNT: String(options.gpuDevices.length),
    RUNPOD_CPU_COUNT: String(spec.vcpus),
    RUNPOD_PUBLIC_IP: options.publicIp,
  };
  for (const binding of spec.ports) {
    env[`GANTRY_PORT_${binding.private}`] ??= String(binding.public);
    if (binding.protocol === 'tcp') env[`RUNPOD_TCP_PORT_${binding.private}`] ??= String(binding.public);
  }
  return env;
}

/**
 * An instance's environment as every runtime layers it, later layers winning: the tenant's `env`
 * (screened first by a runtime that does not isolate env), then `spec.platformEnv`, then
 * {@link platformInstanceEnv}. A runtime adds its own variables over the result.
 */
export function layeredInstanceEnv(spec: InstanceSpec, options: PlatformInstanceEnvOptions): Record<string, string> {
  return { ...spec.env, ...spec.platformEnv, ...platformInstanceEnv(spec, options) };
}
