/**
 * Migration `0020-pod-deadlines`: a pod's own stop and termination times (`stopAfter`,
 * `terminateAfter` on a create), kept so that a restarted server still acts on them.
 * - `pod_deadlines`: one row per pod that has a time still to come; a time acted on becomes null,
 *   and the row goes when neither is left.
 *
 * Index ↔ query map: `pod_deadlines_stop` and `pod_deadlines_terminate` serve the sweep's "what is
 * due" (each half of its OR).
 */
export function podDeadlinesTable(dialect: 'sqlite' | 'postgres'): string[] {
  const big = dialect === 'postgres' ? 'BIGINT' : 'INTEGER';
  return [
    `CREATE TABLE pod_deadlines (
      pod_id TEXT PRIMARY KEY,
      stop_after ${big},
      terminate_after ${big}
    )`,
    `CREATE INDEX pod_deadlines_stop ON pod_deadlines(stop_after) WHERE stop_after IS NOT NULL`,
    `CREATE INDEX pod_deadlines_terminate ON pod_deadlines(terminate_after) WHERE terminate_after IS NOT NULL`,
  ];
}
