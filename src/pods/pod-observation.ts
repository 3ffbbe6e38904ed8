/**
 * What the runtime says of a pod meant to run, applied to its record through the pod state machine
 * (src/domain/pod-state.ts): starting, running, unseen (its engine is away: the pod keeps its status
 * and says why), exited or failed (settled, and the runtime told to forget the instance).
 */
import { nextPodState, type PodEvent } from '../domain/pod-state.js';
import type { InstanceStatus, Runtime } from '../runtime/runtime.js';
import type { PodRecord } from '../store/pod-record.js';
import type { PodStatusWriter } from './pod-status-writer.js';

export interface ObservationDeps {
  status: PodStatusWriter;
  runtime: Pick<Runtime, 'stop'>;
}

/** Applies what the runtime says about a pod that should be running. */
export async function applyObserved(deps: ObservationDeps, pod: PodRecord, live: InstanceStatus): Promise<void> {
  switch (live.state) {
    case 'starting':
      if (pod.status === 'PROVISIONING') await apply(deps, pod, { type: 'prepared' });
      else await deps.status.explain(pod, null);
      return;
    case 'running':
      if (pod.status !== 'RUNNING') await apply(deps, pod, { type: 'ready' });
      else await deps.status.explain(pod, null);
      return;
    case 'suspended':
      // Frozen, not ended: the pod keeps its status and says so.
      await deps.status.explain(pod, live.reason ?? 'the instance is suspended');
      return;
    case 'unknown':
      // Its engine is away: the pod keeps its status and says why it cannot be seen.
      await deps.status.explain(pod, live.reason ?? 'the runtime cannot see the instance right now');
      return;
    case 'exited':
      await apply(deps, pod, {
        type: 'exited',
        reason: live.reason ?? `the process exited with code ${live.exitCode ?? 'unknown'}`,
      });
      return;
    case 'failed':
      await apply(deps, pod, { type: 'failed', reason: live.reason ?? 'the instance failed' });
      return;
    default:
      live.state satisfies never;
  }
}

async function apply(deps: ObservationDeps, pod: PodRecord, event: PodEvent): Promise<void> {
  const t = nextPodState(pod.status, event);
  if (!t.ok) return;
  if (t.status === 'RUNNING') {
    await deps.status.running(pod);
    return;
  }
  if (t.status === 'EXITED' || t.status === 'ERROR') {
    await deps.status.settle(pod, t.status, t.reason ?? null);
    // The instance is gone; let the runtime forget it.
    await deps.runtime.stop(pod.id);
    return;
  }
  await deps.status.transition(pod, t.status, { statusReason: null });
}
