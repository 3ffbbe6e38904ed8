import { newId } from '../domain/ids.js';
import type { Executor } from './database.js';

/**
 * FlashBoot's billing (docs/serverless.md, "FlashBoot"): a launched worker's usage interval
 * (`worker_usage`, docs/billing.md) closes at its suspension and a new one opens at the suspended
 * price (`serverless.flashboot.suspendedPricePerGpuHour` × its GPUs); at its resumption that one
 * closes and one at its launch rate opens again. Nothing changes for a worker with no open interval
 * (one attached by hand, or already ended). Runs in the caller's transaction.
 */
export async function switchWorkerUsage(
  tx: Executor,
  endpointId: string,
  workerId: string,
  now: number,
  to: { suspendedPricePerGpuHour: number } | 'launch-rate',
): Promise<void> {
  const open = await tx
    .selectFrom('worker_usage')
    .select(['id', 'account_id', 'kind'])
    .where('endpoint_id', '=', endpointId)
    .where('worker_id', '=', workerId)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  if (!open) return;
  let rate: number;
  if (to === 'launch-rate') {
    const first = await tx
      .selectFrom('worker_usage')
      .select('cost_per_hr')
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', '=', workerId)
      .orderBy('started_at')
      .orderBy('id')
      .executeTakeFirst();
    rate = Number(first?.cost_per_hr ?? 0);
  } else {
    const row = await tx
      .selectFrom('workers')
      .select('allocation')
      .where('endpoint_id', '=', endpointId)
      .where('id', '=', workerId)
      .executeTakeFirst();
    rate = to.suspendedPricePerGpuHour * gpusOf(row?.allocation ?? null);
  }
  await tx.updateTable('worker_usage').set({ ended_at: now }).where('id', '=', open.id).execute();
  await tx
    .insertInto('worker_usage')
    .values({
      id: newId(),
      worker_id: workerId,
      endpoint_id: endpointId,
      account_id: open.account_id,
      kind: open.kind,
      cost_per_hr: rate,
      started_at: now,
      ended_at: null,
    })
    .execute();
}

/** The GPUs a worker row's allocation holds (0: a CPU worker, or a row without one). */
function gpusOf(allocation: string | null): number {
  if (allocation === null) return 0;
  try {
    const parsed = JSON.parse(allocation) as { gpuIndices?: unknown };
    return Array.isArray(parsed.gpuIndices) ? parsed.gpuIndices.length : 0;
  } catch {
    return 0;
  }
}
