/**
 * Migration `0018-status-change-min-cuda`: what REST v1 answers of pods and endpoints
 * (docs/rest-v1.md).
 * - `pods.status_changed_at`: when the pod's status last changed (v1 `lastStatusChange`). Written
 *   with every status change from then on. Pods stored before it take the time of the last change
 *   that was kept: `terminated_at` for terminated pods, `started_at` for running ones, else
 *   `updated_at` (their last write, at or after their last status change).
 * - `endpoints.min_cuda_version`: the lowest host CUDA version an endpoint's workers may run on
 *   (`major.minor`), null for no bound. Endpoints stored before it have none.
 */
export function statusChangeMinCuda(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return [
    `ALTER TABLE pods ADD COLUMN status_changed_at ${big}`,
    `UPDATE pods SET status_changed_at = CASE
       WHEN status = 'TERMINATED' AND terminated_at IS NOT NULL THEN terminated_at
       WHEN status = 'RUNNING' AND started_at IS NOT NULL THEN started_at
       ELSE updated_at END`,
    `ALTER TABLE endpoints ADD COLUMN min_cuda_version TEXT`,
  ];
}
