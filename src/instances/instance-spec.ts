import { shellWords, startCommandOf } from '../domain/start-command.js';
import type { InstanceSpec } from '../runtime/runtime.js';

/** Where an instance was placed and what it holds there. */
interface InstanceMachine {
  /** '' when it has no host (a pod stored without one) */
  hostId: string;
  /** '' when unknown */
  dataCenterId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  /** Container disk (writable layer) in GB. */
  diskGb: number;
}

/**
 * An instance to describe: the spec's own fields, with its machine given once, and its `args` as
 * the pod or template holds them (shell words, or the override that also sets the entrypoint:
 * domain/start-command.ts).
 */
export type InstancePlan = Omit<
  InstanceSpec,
  'hostId' | 'gpuIndices' | 'vcpus' | 'memoryGb' | 'diskGb' | 'entrypoint'
> & {
  machine: InstanceMachine;
};

/**
 * The instance a pod or a worker runs as. The platform's env of its kind (identity, the worker
 * protocol, injected secrets) is completed with what every instance is told of where it runs —
 * its data center, GPU count and vCPUs — and stays apart from the tenant's env, never screened.
 * An override in `args` becomes the spec's entrypoint and its command words.
 */
export function instanceSpec(plan: InstancePlan): InstanceSpec {
  const { machine, ...spec } = plan;
  const command = startCommandOf(plan.args);
  return {
    ...spec,
    ...(command.form === 'override'
      ? { args: shellWords(command.cmd ?? []), ...(command.entrypoint ? { entrypoint: command.entrypoint } : {}) }
      : {}),
    platformEnv: {
      ...plan.platformEnv,
      RUNPOD_DC_ID: machine.dataCenterId,
      RUNPOD_GPU_COUNT: String(machine.gpuIndices.length),
      RUNPOD_CPU_COUNT: String(machine.vcpus),
    },
    hostId: machine.hostId,
    gpuIndices: machine.gpuIndices,
    vcpus: machine.vcpus,
    memoryGb: machine.memoryGb,
    diskGb: machine.diskGb,
  };
}
