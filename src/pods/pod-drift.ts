import type { InstanceStatus } from '../runtime/runtime.js';
import type { PodRecord } from '../store/pod-record.js';

/**
 * The pods whose records and instances disagree (the periodic sweep reconciles them): one meant
 * to run that is still PROVISIONING, or is RUNNING or STARTING while its instance vanished,
 * ended, or is ready when its record says otherwise (or the reverse); one not meant to run whose
 * instance is listed. An instance its engine cannot see right now is left alone: it may be
 * running fine.
 */
export function driftedPods(
  pods: ReadonlyArray<Pick<PodRecord, 'id' | 'status' | 'desiredStatus'>>,
  instances: readonly InstanceStatus[],
): string[] {
  const live = new Map(instances.map((i) => [i.id, i]));
  const drifted: string[] = [];
  for (const pod of pods) {
    const instance = live.get(pod.id);
    if (instance?.state === 'unknown') continue;
    const differs =
      pod.desiredStatus === 'RUNNING'
        ? pod.status === 'PROVISIONING' ||
          ((pod.status === 'RUNNING' || pod.status === 'STARTING') &&
            (!instance ||
              instance.state === 'exited' ||
              instance.state === 'failed' ||
              (instance.state === 'running' || instance.state === 'suspended') !== (pod.status === 'RUNNING')))
        : instance !== undefined;
    if (differs) drifted.push(pod.id);
  }
  return drifted;
}
