/**
 * Whether a pod's instance can be started or changed now: the runtime as a whole (503
 * RUNTIME_UNAVAILABLE: nothing is stored or reserved) and the pod's own host (409
 * HOST_UNAVAILABLE: a fleet host that is unreachable or revoked). Each refusal says what still works.
 */
import { ApiError } from '../domain/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import type { PodRecord } from '../store/pod-record.js';

/** 503 RUNTIME_UNAVAILABLE while the runtime as a whole cannot start instances: nothing is stored or reserved. */
export function assertRuntimeAvailable(
  runtime: Pick<Runtime, 'unavailable'>,
  what = 'No instance can be started right now',
): void {
  const reason = runtime.unavailable?.() ?? null;
  if (reason !== null)
    throw new ApiError(
      'RUNTIME_UNAVAILABLE',
      `${what}: ${reason}. Nothing was created or changed; try again once the runtime is back.`,
    );
}

/**
 * 409 HOST_UNAVAILABLE while the pod's own host cannot start anything (a fleet host that is
 * unreachable, or revoked): nothing is changed, and the detail says what still works.
 */
export function assertHostReachable(runtime: Pick<Runtime, 'unavailable'>, pod: PodRecord, what: string): void {
  const reason = pod.hostId === null ? null : (runtime.unavailable?.(pod.hostId) ?? null);
  if (reason !== null)
    throw new ApiError(
      'HOST_UNAVAILABLE',
      `Pod "${pod.id}" cannot be ${what}: ${reason}. Nothing was changed. It can still be stopped or terminated; once its host reports again it can be started (a revoked host never does: terminate the pod and create a new one).`,
    );
}
