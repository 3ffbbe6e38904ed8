/**
 * Billing (REST `GET /v2/billing*`): what an account spent per time bucket, computed from the
 * append-only usage intervals Gantry keeps (docs/billing.md). A bucket's cost is the sum over the
 * intervals clipped to it of milliseconds × the interval's price, so a pod that ran 90 s, stopped
 * and ran 30 s more costs exactly 120 s of its price, wherever the bucket edges fall.
 *
 * One method per operation of the public OpenAPI, each answering its response shape, so REST v2
 * routes and the v1 layer call the same figures.
 */
import type { Clock } from '../domain/clock.js';
import type { BillingStore, IntervalQuery, PricedInterval } from '../store/billing-store.js';
import type {
  QueryEcho,
  Bucketed,
  BillingAmounts,
  PodBillingAmounts,
  ServerlessBillingAmounts,
  NetworkVolumeBillingAmounts,
  ClusterBillingAmounts,
  ListBillingResponse,
  ListPodBillingResponse,
  ListServerlessBillingResponse,
  ListEndpointBillingResponse,
  ListNetworkVolumeBillingResponse,
  ListClusterBillingResponse,
} from './billing-responses.js';
import { resolveWindow, rfc3339, type BillingWindow, type WindowQuery } from './billing-window.js';

/** The public platform's price of standard network storage, USD per GB and month. */
export const DEFAULT_VOLUME_PRICE_PER_GB_MONTH = 0.07;
/** Hours in a billing month (365 × 24 / 12): a GB-month price per hour is price / 730. */
const HOURS_PER_MONTH = 730;
const MS_PER_HOUR = 3_600_000;

export interface BillingServiceDeps {
  store: Pick<BillingStore, 'podIntervals' | 'clusterIntervals' | 'workerIntervals' | 'volumeIntervals'>;
  clock: Clock;
  /** USD per GB-month of network volume storage. @default 0.07 */
  volumePricePerGbMonth?: number;
}

/** Dollars to a billionth: sums of float products read as the figures people expect. */
const usd = (x: number): number => Math.round(x * 1e9) / 1e9;

/** USD by kind (gpu, cpu, standard) for one resource in one bucket. */
type KindAmounts = Record<PricedInterval['kind'], number>;
const noAmounts = (): KindAmounts => ({ gpu: 0, cpu: 0, standard: 0 });

/**
 * Each interval's cost spread over the window's buckets: per resource, per bucket index, USD by
 * kind. Open intervals accrue up to `now`. `usdPerHour` turns an interval's rate into USD per hour.
 */
function accrue(
  intervals: readonly PricedInterval[],
  window: BillingWindow,
  now: number,
  usdPerHour: (i: PricedInterval) => number,
): Map<string, Map<number, KindAmounts>> {
  const byResource = new Map<string, Map<number, KindAmounts>>();
  const { buckets } = window;
  for (const interval of intervals) {
    const from = Math.max(interval.startedAt, window.start);
    const to = Math.min(interval.endedAt ?? Math.max(now, interval.startedAt), window.end);
    if (to <= from) continue;
    const perMs = usdPerHour(interval) / MS_PER_HOUR;
    // first bucket whose end is after `from` (buckets are sorted and contiguous)
    let lo = 0;
    let hi = buckets.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (buckets[mid]!.end <= from) lo = mid + 1;
      else hi = mid;
    }
    let perBucket = byResource.get(interval.resourceId);
    if (!perBucket) byResource.set(interval.resourceId, (perBucket = new Map<number, KindAmounts>()));
    for (let i = lo; i < buckets.length && buckets[i]!.start < to; i++) {
      const ms = Math.min(to, buckets[i]!.end) - Math.max(from, buckets[i]!.start);
      if (ms <= 0) continue;
      let amounts = perBucket.get(i);
      if (!amounts) perBucket.set(i, (amounts = noAmounts()));
      amounts[interval.kind] += ms * perMs;
    }
  }
  return byResource;
}

/** Per-resource rows: one per resource that accrued in the window, per bucket; bucket then id order. */
function perResource<R>(
  window: BillingWindow,
  accrued: Map<string, Map<number, KindAmounts>>,
  row: (bucket: Bucketed, resourceId: string, amounts: KindAmounts) => R,
): R[] {
  const ids = [...accrued.keys()].sort();
  const records: R[] = [];
  window.buckets.forEach((b, i) => {
    const bucket = { startTime: rfc3339(b.start), endTime: rfc3339(b.end) };
    for (const id of ids) records.push(row(bucket, id, accrued.get(id)!.get(i) ?? noAmounts()));
  });
  return records;
}

/** The sum of each amount field over the records, rounded like them. */
function totalsOf<A extends object>(records: readonly A[], zero: A): A {
  const totals = { ...zero } as Record<string, number>;
  for (const r of records)
    for (const key of Object.keys(zero)) totals[key] = totals[key]! + (r as Record<string, number>)[key]!;
  for (const key of Object.keys(totals)) totals[key] = usd(totals[key]!);
  return totals as A;
}

const echo = (w: BillingWindow): QueryEcho => ({
  startTime: rfc3339(w.start),
  endTime: rfc3339(w.end),
  bucketSize: w.bucketSize,
});

const zeroPod = (): PodBillingAmounts => ({ totalAmount: 0, gpuAmount: 0, cpuAmount: 0, diskAmount: 0 });
const zeroServerless = (): ServerlessBillingAmounts => ({ ...zeroPod(), feeAmount: 0 });
const zeroVolume = (): NetworkVolumeBillingAmounts => ({ totalAmount: 0, standardAmount: 0, highPerformanceAmount: 0 });
const zeroCluster = (): ClusterBillingAmounts => ({ totalAmount: 0, gpuAmount: 0, diskAmount: 0, networkingAmount: 0 });
const zeroAll = (): BillingAmounts => ({
  totalAmount: 0,
  podGpuAmount: 0,
  podCpuAmount: 0,
  podDiskAmount: 0,
  serverlessGpuAmount: 0,
  serverlessCpuAmount: 0,
  serverlessDiskAmount: 0,
  serverlessFeeAmount: 0,
  storageStandardAmount: 0,
  storageHighPerformanceAmount: 0,
  endpointAmount: 0,
  clusterGpuAmount: 0,
  clusterDiskAmount: 0,
  clusterNetworkingAmount: 0,
});

const podAmounts = (a: KindAmounts): PodBillingAmounts => ({
  totalAmount: usd(a.gpu + a.cpu),
  gpuAmount: usd(a.gpu),
  cpuAmount: usd(a.cpu),
  diskAmount: 0,
});

export class BillingService {
  readonly #volumeUsdPerGbHour: number;

  constructor(private readonly deps: BillingServiceDeps) {
    this.#volumeUsdPerGbHour = (deps.volumePricePerGbMonth ?? DEFAULT_VOLUME_PRICE_PER_GB_MONTH) / HOURS_PER_MONTH;
  }

  #window(query: WindowQuery): { window: BillingWindow; now: number } {
    const now = this.deps.clock.now();
    return { window: resolveWindow(query, now), now };
  }

  #intervals(accountId: string, window: BillingWindow, resourceId?: string): IntervalQuery {
    return { accountId, start: window.start, end: window.end, resourceId };
  }

  /** `listBilling`: every resource family's amounts, one record per bucket. */
  async listBilling(accountId: string, query: WindowQuery): Promise<ListBillingResponse> {
    const { window, now } = this.#window(query);
    const q = this.#intervals(accountId, window);
    const [pods, clusters, workers, volumes] = await Promise.all([
      this.deps.store.podIntervals(q),
      this.deps.store.clusterIntervals(q),
      this.deps.store.workerIntervals(q),
      this.deps.store.volumeIntervals(q),
    ]);
    const sumByBucket = (accrued: Map<string, Map<number, KindAmounts>>): Map<number, KindAmounts> => {
      const out = new Map<number, KindAmounts>();
      for (const perBucket of accrued.values())
        for (const [i, a] of perBucket) {
          const s = out.get(i) ?? noAmounts();
          s.gpu += a.gpu;
          s.cpu += a.cpu;
          s.standard += a.standard;
          out.set(i, s);
        }
      return out;
    };
    const podBuckets = sumByBucket(accrue(pods, window, now, (i) => i.rate));
    const clusterBuckets = sumByBucket(accrue(clusters, window, now, (i) => i.rate));
    const workerBuckets = sumByBucket(accrue(workers, window, now, (i) => i.rate));
    const volumeBuckets = sumByBucket(accrue(volumes, window, now, (i) => i.rate * this.#volumeUsdPerGbHour));
    const records = window.buckets.map((b, i) => {
      const pod = podBuckets.get(i) ?? noAmounts();
      const cluster = clusterBuckets.get(i) ?? noAmounts();
      const worker = workerBuckets.get(i) ?? noAmounts();
      const volume = volumeBuckets.get(i) ?? noAmounts();
      return {
        startTime: rfc3339(b.start),
        endTime: rfc3339(b.end),
        ...zeroAll(),
        totalAmount: usd(pod.gpu + pod.cpu + cluster.gpu + cluster.cpu + worker.gpu + worker.cpu + volume.standard),
        podGpuAmount: usd(pod.gpu),
        podCpuAmount: usd(pod.cpu),
        clusterGpuAmount: usd(cluster.gpu + cluster.cpu),
        serverlessGpuAmount: usd(worker.gpu),
        serverlessCpuAmount: usd(worker.cpu),
        storageStandardAmount: usd(volume.standard),
      };
    });
    return {
      records,
      metadata: { query: echo(window), recordCount: records.length, totals: totalsOf(records, zeroAll()) },
    };
  }

  /** `listPodBilling`: one record per pod per bucket; `podId` narrows to one of the account's pods. */
  async listPodBilling(accountId: string, query: WindowQuery & { podId?: string }): Promise<ListPodBillingResponse> {
    const { window, now } = this.#window(query);
    const intervals = await this.deps.store.podIntervals(this.#intervals(accountId, window, query.podId));
    const accrued = accrue(intervals, window, now, (i) => i.rate);
    const records = perResource(window, accrued, (bucket, podId, a) => ({ ...bucket, podId, ...podAmounts(a) }));
    return {
      records,
      metadata: {
        query: { ...echo(window), podId: query.podId ?? null },
        recordCount: records.length,
        uniquePodCount: accrued.size,
        totals: totalsOf(records, zeroPod()),
      },
    };
  }

  /** `listServerlessBilling`: one record per serverless endpoint per bucket, from its launched workers. */
  async listServerlessBilling(
    accountId: string,
    query: WindowQuery & { serverlessId?: string },
  ): Promise<ListServerlessBillingResponse> {
    const { window, now } = this.#window(query);
    const intervals = await this.deps.store.workerIntervals(this.#intervals(accountId, window, query.serverlessId));
    const accrued = accrue(intervals, window, now, (i) => i.rate);
    const records = perResource(window, accrued, (bucket, serverlessId, a) => ({
      ...bucket,
      serverlessId,
      ...podAmounts(a),
      feeAmount: 0,
    }));
    return {
      records,
      metadata: {
        query: { ...echo(window), serverlessId: query.serverlessId ?? null },
        recordCount: records.length,
        uniqueServerlessCount: accrued.size,
        totals: totalsOf(records, zeroServerless()),
      },
    };
  }

  /** `listEndpointBilling`: the platform's public endpoints; Gantry hosts none, so every bucket is 0. */
  listEndpointBilling(_accountId: string, query: WindowQuery): Promise<ListEndpointBillingResponse> {
    const { window } = this.#window(query);
    const records = window.buckets.map((b) => ({
      startTime: rfc3339(b.start),
      endTime: rfc3339(b.end),
      totalAmount: 0,
    }));
    return Promise.resolve({
      records,
      metadata: { query: echo(window), recordCount: records.length, totals: { totalAmount: 0 } },
    });
  }

  /** `listNetworkVolumeBilling`: one record per volume per bucket, size × the GB-month price, to the millisecond. */
  async listNetworkVolumeBilling(
    accountId: string,
    query: WindowQuery & { networkVolumeId?: string },
  ): Promise<ListNetworkVolumeBillingResponse> {
    const { window, now } = this.#window(query);
    const intervals = await this.deps.store.volumeIntervals(this.#intervals(accountId, window, query.networkVolumeId));
    const accrued = accrue(intervals, window, now, (i) => i.rate * this.#volumeUsdPerGbHour);
    const records = perResource(window, accrued, (bucket, networkVolumeId, a) => ({
      ...bucket,
      networkVolumeId,
      totalAmount: usd(a.standard),
      standardAmount: usd(a.standard),
      highPerformanceAmount: 0,
    }));
    return {
      records,
      metadata: {
        query: { ...echo(window), networkVolumeId: query.networkVolumeId ?? null },
        recordCount: records.length,
        uniqueNetworkVolumeCount: accrued.size,
        totals: totalsOf(records, zeroVolume()),
      },
    };
  }

  /**
   * `listClusterBilling`: one record per cluster per bucket, from its member pods' intervals
   * (members are billed here, not in `listPodBilling`); `clusterId` narrows to one cluster.
   */
  async listClusterBilling(
    accountId: string,
    query: WindowQuery & { clusterId?: string },
  ): Promise<ListClusterBillingResponse> {
    const { window, now } = this.#window(query);
    const intervals = await this.deps.store.clusterIntervals(this.#intervals(accountId, window, query.clusterId));
    const accrued = accrue(intervals, window, now, (i) => i.rate);
    const records = perResource(window, accrued, (bucket, clusterId, a) => ({
      ...bucket,
      clusterId,
      totalAmount: usd(a.gpu + a.cpu),
      gpuAmount: usd(a.gpu + a.cpu),
      diskAmount: 0,
      networkingAmount: 0,
    }));
    return {
      records,
      metadata: {
        query: { ...echo(window), clusterId: query.clusterId ?? null },
        recordCount: records.length,
        uniqueClusterCount: accrued.size,
        totals: totalsOf(records, zeroCluster()),
      },
    };
  }
}
