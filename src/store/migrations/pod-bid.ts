/**
 * Migration `0022-pod-bid`: interruptible (spot) pods (docs/pods.md, "Interruptible pods").
 * - `pods.bid_per_gpu`: what an interruptible pod bids, USD per GPU per hour; null for an
 *   on-demand pod. Pods stored before it are on-demand.
 */
export function podBid(dialect: 'sqlite' | 'postgres'): string[] {
  const real = dialect === 'postgres' ? 'DOUBLE PRECISION' : 'REAL';
  return [`ALTER TABLE pods ADD COLUMN bid_per_gpu ${real}`];
}
