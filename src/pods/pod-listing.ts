/**
 * A page of the pod list (Gantry extension to `GET /v2/pods`, docs/api.md "Paging the pod list"):
 * search, sort and slice over the account's rendered pods. Pure: the views and their start times
 * come in. The order is total (ties fall to the pod id), so consecutive pages of one query hold
 * every pod exactly once while the list does not change.
 */
import type { PodView } from './pod-view.js';

export const POD_SORTS = ['created', 'name', 'status', 'gpu', 'cost', 'uptime', 'dataCenter'] as const;
export type PodSort = (typeof POD_SORTS)[number];
export const POD_ORDERS = ['asc', 'desc'] as const;
export type PodOrder = (typeof POD_ORDERS)[number];

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

export interface PodPage {
  pods: PodView[];
  /** pods matching the filters and the search, before offset and limit */
  total: number;
  /** of those, how many are RUNNING */
  running: number;
  /** of those, the sum of `cost` (USD per hour) */
  costPerHr: number;
}

/** A rendered pod with what its uptime is measured from (ms), for RUNNING pods. */
export interface ListedPod {
  view: PodView;
  runningSince: number | null;
}

/** What the GPU column shows: `2 × NVIDIA GeForce RTX 4090`, `4 vCPU cpu3c`. */
export const computeOf = (pod: PodView): string =>
  pod.gpu ? `${pod.gpu.count} × ${pod.gpu.id}` : pod.cpu ? `${pod.cpu.vcpuCount} vCPU ${pod.cpu.id}` : '';

const haystack = (p: PodView): string =>
  `${p.name} ${p.id} ${p.status} ${computeOf(p)} ${p.image} ${p.dataCenterId ?? ''}`.toLowerCase();

/** Names, statuses, GPUs and data centers in a reader's order (`a-pod` next to `B-pod`). */
const collator = new Intl.Collator('en');
const byWords = (a: string, b: string): number => collator.compare(a, b);
/** Plain code-unit order: ISO dates and ids, the same on every database. */
const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byNumber = (a: number, b: number): number => a - b;

type Compare = (a: ListedPod, b: ListedPod) => number;

const COMPARE: Record<PodSort, Compare> = {
  created: (a, b) => byText(a.view.createdAt, b.view.createdAt),
  name: (a, b) => byWords(a.view.name, b.view.name),
  status: (a, b) => byWords(a.view.status, b.view.status),
  gpu: (a, b) => byWords(computeOf(a.view), computeOf(b.view)),
  cost: (a, b) => byNumber(a.view.cost, b.view.cost),
  // the longest-running last when ascending; pods not running first. Compared by the start time,
  // not by whole seconds of uptime, so two polls a second apart put ties in the same order
  uptime: (a, b) =>
    a.runningSince === null
      ? b.runningSince === null
        ? 0
        : -1
      : b.runningSince === null
        ? 1
        : byNumber(b.runningSince, a.runningSince),
  dataCenter: (a, b) => byWords(a.view.dataCenterId ?? '', b.view.dataCenterId ?? ''),
};

export function podPage(listed: readonly ListedPod[], query: PodPageQuery): PodPage {
  const words = (query.search ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const matching =
    words.length === 0 ? [...listed] : listed.filter((p) => words.every((w) => haystack(p.view).includes(w)));
  const cmp = COMPARE[query.sort ?? 'created'];
  const sign = query.order === 'desc' ? -1 : 1;
  matching.sort((a, b) => sign * cmp(a, b) || byText(a.view.id, b.view.id));
  const offset = query.offset ?? 0;
  const page = matching.slice(offset, query.limit === undefined ? undefined : offset + query.limit);
  let running = 0;
  let costPerHr = 0;
  for (const p of matching) {
    if (p.view.status === 'RUNNING') running++;
    costPerHr += p.view.cost;
  }
  return {
    pods: page.map((p) => p.view),
    total: matching.length,
    running,
    // cents of a cent: the sum of floats is rounded so the header reads as the rates do
    costPerHr: Math.round(costPerHr * 10_000) / 10_000,
  };
}
