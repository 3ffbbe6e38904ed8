/**
 * Usage of pods on a fleet host that is lost for longer than the lost grace: it stops accruing
 * while the pods cannot be seen, and starts again when the host reports their instances running.
 * Each step runs in the pod's turn of the controller's queues.
 */
import { newSortableId } from '../domain/ids.js';
import type { PodStore } from '../store/pod-store.js';
import type { SerialQueues } from './serial-queues.js';

/**
 * The open usage interval of each RUNNING pod on `hostId` ends at `at` (not before it began), so
 * cost stops accruing while the pod cannot be seen. Its status is left as it is.
 */
export async function pauseUsage(
  store: Pick<PodStore, 'listActive' | 'closeUsage'>,
  queues: Pick<SerialQueues, 'run'>,
  hostId: string,
  at: number,
): Promise<void> {
  const pods = (await store.listActive()).filter((p) => p.hostId === hostId && p.status === 'RUNNING');
  await Promise.all(pods.map((p) => queues.run(p.id, () => store.closeUsage(p.id, Math.max(at, p.startedAt ?? at)))));
}

/**
 * Each pod still RUNNING and meant to run that has no open usage interval (paused by
 * `pauseUsage`) gets one from `at`.
 */
export async function resumeUsage(
  store: Pick<PodStore, 'get' | 'listUsage' | 'openUsage'>,
  queues: Pick<SerialQueues, 'run'>,
  podIds: readonly string[],
  at: number,
): Promise<void> {
  await Promise.all(
    podIds.map((id) =>
      queues.run(id, async () => {
        const pod = await store.get(id);
        if (!pod || pod.status !== 'RUNNING' || pod.desiredStatus !== 'RUNNING') return;
        if ((await store.listUsage(id)).some((u) => u.endedAt === null)) return;
        await store.openUsage({
          id: newSortableId(),
          podId: id,
          accountId: pod.accountId,
          costPerHr: pod.costPerHr,
          startedAt: at,
        });
      }),
    ),
  );
}
