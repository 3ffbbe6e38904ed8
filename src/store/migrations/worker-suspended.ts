/**
 * Migration `0024-worker-suspended`: a worker row's `suspended_at`, when the autoscaler froze it
 * (status `suspended`, issue 30 FlashBoot; serverless/worker-suspension.ts): its keep time counts
 * from there, also after a restart. Null while the worker is not suspended. The status itself is
 * plain text (no constraint to change): `suspended` rows are exempt from the heartbeat-loss sweep,
 * which reads live statuses only.
 */
export function workerSuspended(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return [`ALTER TABLE workers ADD COLUMN suspended_at ${big}`];
}
