/**
 * A page of the pod list (Gantry extension to `GET /v2/pods`, docs/api.md "Paging the pod list"):
 * search, sort and slice over the account's stored pods, before any is rendered, so that a page
 * renders only its own pods. Pure: the records and their start times come in. The order is total
 * (ties fall to the pod id), so consecutive pages of one query hold every pod exactly once while
 * the list does not change.
 */
import type { PodRecord } from '../store/pod-record.js';
import { podCost } from './pod-view.js';

export const POD_SORTS = ['created', 'name', 'status', 'gpu', 'cost', 'uptime', 'dataCenter'] as const;
type PodSort = (typeof POD_SORTS)[number];
export const POD_ORDERS = ['asc', 'desc'] as const;
type PodOrder = (typeof POD_ORDERS)[number];

/** The most pods one page may hold. */
export const POD_PAGE_MAX = 500;
/** The furthest `offset` accepted (an account holds far fewer pods). */
export const POD_OFFSET_MAX = 1_000_000;
/** The longest `search` accepted. */
export const POD_SEARCH_MAX = 200;

export interface PodPageQuery {
  /** whitespace-separated words; a pod matches when each is in its name, id, status, GPU or CPU, image or data center */
  search?: string;
  sort?: PodSort;
  order?: PodOrder;
  offset?: number;
  /** absent: every pod from `offset` on */
  limit?: number;
}

/** A page of `T` (records here, views once rendered) and the figures of every pod that matches. */
export interface PodPage<T> {
  pods: T[];
  /** pods matching the filters and the search, before offset and limit */
  total: number;
  /** of those, how many are RUNNING */
  running: number;
  /** of those, the sum of `cost` (USD per hour) */
  costPerHr: number;
}

/**
 * When each RUNNING pod's uptime counts from (ms): what `sort=uptime` orders by. Only that sort
 * needs it (it asks the runtime), so it is a function the page calls when it does.
 */
export type RunningSince = (pods: readonly PodRecord[]) => Promise<ReadonlyMap<string, number>>;

/** What the GPU column shows (pod-view's gpu/cpu): `2 × NVIDIA GeForce RTX 4090`, `4 vCPU cpu3c`. */
const computeOf = (pod: PodRecord): string =>
  pod.gpuTypeId
    ? `${pod.gpuCount} × ${pod.gpuTypeId}`
    : pod.cpuFlavorId
      ? `${pod.vcpuCount} vCPU ${pod.cpuFlavorId}`
      : '';

const haystack = (p: PodRecord): string =>
  `${p.name} ${p.id} ${p.status} ${computeOf(p)} ${p.image} ${p.dataCenterId ?? ''}`.toLowerCase();

/** Names, statuses, GPUs and data centers in a reader's order (`a-pod` next to `B-pod`). */
const collator = new Intl.Collator('en');
const byWords = (a: string, b: string): number => collator.compare(a, b);
/** Plain code-unit order for ids: the same on every database. */
const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

type Compare = (a: PodRecord, b: PodRecord) => number;

const COMPARE: Record<Exclude<PodSort, 'uptime'>, Compare> = {
  created: (a, b) => a.createdAt - b.createdAt,
  name: (a, b) => byWords(a.name, b.name),
  status: (a, b) => byWords(a.status, b.status),
  gpu: (a, b) => byWords(computeOf(a), computeOf(b)),
  cost: (a, b) => podCost(a) - podCost(b),
  dataCenter: (a, b) => byWords(a.dataCenterId ?? '', b.dataCenterId ?? ''),
};

/**
 * The longest-running last when ascending, pods not running first. Compared by the start time, not
 * by whole seconds of uptime, so two polls a second apart put ties in the same order.
 */
const byUptime =
  (since: ReadonlyMap<string, number>): Compare =>
  (a, b) => {
    const x = since.get(a.id);
    const y = since.get(b.id);
    if (x === undefined) return y === undefined ? 0 : -1;
    return y === undefined ? 1 : y - x;
  };

export async function podPage(
  pods: readonly PodRecord[],
  query: PodPageQuery,
  runningSince: RunningSince,
): Promise<PodPage<PodRecord>> {
  const words = (query.search ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const matching =
    words.length === 0
      ? [...pods]
      : pods.filter((p) => {
          const text = haystack(p);
          return words.every((w) => text.includes(w));
        });
  const sort = query.sort ?? 'created';
  const cmp = sort === 'uptime' ? byUptime(await runningSince(matching)) : COMPARE[sort];
  const sign = query.order === 'desc' ? -1 : 1;
  matching.sort((a, b) => sign * cmp(a, b) || byText(a.id, b.id));
  const offset = query.offset ?? 0;
  let running = 0;
  let costPerHr = 0;
  for (const p of matching) {
    if (p.status === 'RUNNING') running++;
    costPerHr += podCost(p);
  }
  return {
    pods: matching.slice(offset, query.limit === undefined ? undefined : offset + query.limit),
    total: matching.length,
    running,
    // the sum of floats is rounded so the header reads as the rates do
    costPerHr: Math.round(costPerHr * 10_000) / 10_000,
  };
}
