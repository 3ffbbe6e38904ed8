/**
 * Migration `0021-endpoint-instance-ids`: `endpoints.instance_ids`, the CPU instances a CPU
 * endpoint's workers run on (`cpu3g-4-16,cpu3c-4-8`, in preference order). Endpoints stored
 * before it are GPU endpoints: empty.
 */
export const endpointInstanceIds = (): string[] => [
  `ALTER TABLE endpoints ADD COLUMN instance_ids TEXT NOT NULL DEFAULT ''`,
];
