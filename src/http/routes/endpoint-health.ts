import type { TransportServices } from '../../transport/services.js';

/**
 * `GET /v2/{endpointId}/health`: the endpoint's job counts, its workers by state, and what the
 * autoscaler knows that the workers table cannot (placements refused for lack of capacity, a
 * crash-looping image held back).
 */
export async function endpointHealth(
  { jobs, workers, autoscaler }: Pick<TransportServices, 'jobs' | 'workers' | 'autoscaler'>,
  endpointId: string,
) {
  const [stats, workerCounts] = await Promise.all([
    jobs.client.queueStats(endpointId),
    workers.healthCounts(endpointId),
  ]);
  // The autoscaler knows what the workers table cannot: placements refused for lack of
  // capacity (throttled) and crash-looping images held back (unhealthy).
  const scale = autoscaler.health(endpointId);
  return {
    jobs: {
      completed: stats.completed,
      failed: stats.failed,
      inProgress: stats.inProgress,
      inQueue: stats.inQueue,
      retried: stats.retried,
      cancelled: stats.cancelled,
      timedOut: stats.timedOut,
    },
    workers: {
      ...workerCounts,
      throttled: Math.max(workerCounts.throttled, scale.throttled),
      unhealthy: Math.max(workerCounts.unhealthy, scale.unhealthy),
    },
    scaling: {
      capacityError: scale.capacityError,
      crashes: scale.crashes,
      backoffUntil: scale.backoffUntil === null ? null : new Date(scale.backoffUntil).toISOString(),
      lastCrash: scale.lastCrash,
    },
  };
}
