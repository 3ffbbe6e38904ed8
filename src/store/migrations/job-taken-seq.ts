/**
 * Migration `0019-job-taken-seq`: the order of takes, so a worker's report of the jobs it holds
 * can be read against them (docs/serverless.md "Jobs a worker no longer holds").
 * - `jobs.taken_seq`: set by every take; a later take of the same worker always sets a larger
 *   value, and the jobs one take hands to one worker share theirs. Jobs taken before this
 *   migration have none (their order is unknown: no report moves them by it).
 * - PostgreSQL: the sequence `jobs_taken_seq` that orders takes across replicas. SQLite, whose
 *   one writer is this process, counts them in memory from the largest stored value.
 */
export function jobTakenSeq(dialect: 'sqlite' | 'postgres'): string[] {
  if (dialect === 'sqlite') return [`ALTER TABLE jobs ADD COLUMN taken_seq INTEGER`];
  return [`ALTER TABLE jobs ADD COLUMN taken_seq BIGINT`, `CREATE SEQUENCE jobs_taken_seq`];
}
