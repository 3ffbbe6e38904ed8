// Placement throughput: Inventory.placeAndReserve over a large mixed fleet, with reserve and
// release churn and a share of requests that must be refused (with their reason). A third of the
// pods are interruptible (spot) at a bid; the others may take their machines back (the reclaim
// ladder, docs/pods.md). A second scenario fills every GPU, mostly with interruptible pods, and
// measures on-demand creates that take them back.
//   node --import tsx bench/placement.ts [--hosts 5000] [--decisions 200000] [--deadlines] [--spot-share 0.333]
// --deadlines gives every host a heartbeat deadline on a clock, as `runtime: fleet` does (each
// decision first checks that none has passed).
// Goal: >= 20,000 decisions/s over 5,000 hosts.
import { parseArgs } from 'node:util';
import { defaultCatalog, type Cloud, type Host } from '../src/domain/catalog.js';
import { systemClock } from '../src/domain/clock.js';
import type { PlacementRequest } from '../src/domain/placement-request.js';
import { Inventory } from '../src/inventory/inventory.js';
import { printTable } from './support/processes.js';

const { values } = parseArgs({
  options: {
    hosts: { type: 'string', default: '5000' },
    decisions: { type: 'string', default: '200000' },
    deadlines: { type: 'boolean', default: false },
    'spot-share': { type: 'string', default: String(1 / 3) },
  },
});
const hostCount = Number(values.hosts);
const decisions = Number(values.decisions);
const GOAL = 20_000;

/** Deterministic PRNG (mulberry32) so runs are comparable. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(42);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
// Which pods are interruptible, and their bids, come from their own sequence: the hosts and the
// requests are the same as in a run without them.
const spotRandom = prng(7);
const spotShare = Number(values['spot-share']);
const BIDS = [0.2, 0.25, 0.3, 0.35, 0.4, 0.5];
const bidOf = (): number => BIDS[Math.floor(spotRandom() * BIDS.length)]!;

/**
 * A pod's terms on the reclaim ladder: `--spot-share` of them (a third) interruptible at a bid, the
 * rest on demand. Set in place on a request that has both keys already (`base`), as the pods
 * service writes them into its request literal (pod-record.ts): one object shape for placement.
 */
function podTerms(request: PlacementRequest): PlacementRequest {
  if (spotRandom() >= spotShare) {
    request.reclaim = { kind: 'on-demand' };
    return request;
  }
  const bidPerGpu = bidOf();
  request.reclaim = { kind: 'bid', bidPerGpu };
  request.reclaimable = { rung: 'interruptible', bidPerGpu };
  return request;
}

const catalog = defaultCatalog();
const gpuTypes = catalog.gpuTypes.slice(0, 12).map((t) => t.id); // H100s are left out so requests for them are refused
const dcs = catalog.dataCenters.map((d) => d.id);
const cudas = ['11.8', '12.0', '12.1', '12.2', '12.4', '12.8'];

function fleet(n: number): Host[] {
  return Array.from({ length: n }, (_, i): Host => {
    const cpuOnly = random() < 0.05;
    return {
      id: `host-${String(i).padStart(5, '0')}`,
      dataCenterId: pick(dcs),
      cloud: random() < 0.35 ? 'COMMUNITY' : 'SECURE',
      cudaVersion: cpuOnly ? null : pick(cudas),
      gpuTypeId: cpuOnly ? null : pick(gpuTypes),
      gpuCount: cpuOnly ? 0 : pick([1, 2, 4, 8, 8]),
      cpuFlavors: cpuOnly ? ['cpu3c', 'cpu3g', 'cpu3m'] : [],
      vcpus: cpuOnly ? 128 : 96,
      memoryGb: cpuOnly ? 1024 : 768,
      diskGb: 4000,
      portRange: [20000, 20199],
      publicIp: '10.0.0.1',
    };
  });
}

const base: PlacementRequest = {
  kind: 'gpu',
  gpuTypeIds: [],
  gpuCount: 1,
  cpuFlavorId: null,
  vcpuCount: 8,
  memoryGb: 32,
  diskGb: 50,
  cloud: 'SECURE',
  dataCenterIds: [],
  volumeDataCenterId: null,
  allowedCudaVersions: [],
  minCudaVersion: null,
  portCount: 2,
  globalNetworking: false,
  // every request has the same keys, as the pods' `placementRequest` gives them: one shape
  reclaim: undefined,
  reclaimable: undefined,
};

/** A request mix: mostly pods that fit, serverless pools over several types, CPU pods, and requests that cannot fit. */
function makeRequest(): PlacementRequest {
  const r = random();
  if (r < 0.55) {
    return podTerms({
      ...base,
      gpuTypeIds: [pick(gpuTypes)],
      gpuCount: pick([1, 1, 1, 2, 2, 4, 8]),
      cloud: pick<Cloud | 'ALL'>(['SECURE', 'COMMUNITY', 'ALL']),
      dataCenterIds: random() < 0.4 ? [pick(dcs)] : [],
      ...(random() < 0.3
        ? { allowedCudaVersions: [pick(cudas)] }
        : random() < 0.3
          ? { minCudaVersion: pick(['12', '12.2', '12.4']) }
          : {}),
    });
  }
  if (r < 0.7) {
    const pool = catalog.gpuTypes.filter((t) => t.pool === pick(catalog.gpuTypes).pool).map((t) => t.id);
    return { ...base, gpuTypeIds: pool, gpuCount: pick([1, 2]), cloud: 'ALL', portCount: 0 };
  }
  if (r < 0.8) {
    const vcpuCount = pick([2, 4, 8, 16]);
    return podTerms({
      ...base,
      kind: 'cpu',
      gpuTypeIds: [],
      gpuCount: 0,
      cpuFlavorId: pick(['cpu3c', 'cpu3g', 'cpu3m']),
      vcpuCount,
      memoryGb: vcpuCount * 4,
      cloud: 'ALL',
    });
  }
  // refused: a CUDA version no host reports, a type no host has, more GPUs than any host, no global networking
  return podTerms(
    pick<PlacementRequest>([
      { ...base, gpuTypeIds: [pick(gpuTypes)], allowedCudaVersions: ['13.0'] },
      { ...base, gpuTypeIds: ['NVIDIA H100 80GB HBM3'] },
      { ...base, gpuTypeIds: [pick(gpuTypes)], gpuCount: 16, cloud: 'ALL' },
      { ...base, gpuTypeIds: ['NVIDIA RTX A4000'], globalNetworking: true },
    ]),
  );
}

const hosts = fleet(hostCount);
const inventory = new Inventory({ hosts, catalog, ...(values.deadlines ? { clock: systemClock } : {}) });
// far enough that none passes during the run: what is measured is the check, not a lapse
if (values.deadlines) for (const h of hosts) inventory.reachableUntil(h.id, Date.now() + 3_600_000);
const requests = Array.from({ length: 4096 }, makeRequest);
const totalGpus = hosts.reduce((n, h) => n + h.gpuCount, 0);

// Holders live in a ring: each new reservation past the target evicts the oldest (churn).
const target = Math.floor(totalGpus * 0.35);
const ring = new Array<string>(target);
let head = 0;
let live = 0;
let placed = 0;
let refused = 0;
let serial = 0;
const reasons = new Map<string, number>();

let reclaimedInMixed = 0;

function decide(i: number): void {
  const holder = `h${serial++}`;
  const result = inventory.placeAndReserve(holder, requests[i & 4095]!);
  if (result.ok && result.reclaimed) reclaimedInMixed += result.reclaimed.length;
  if (!result.ok) {
    refused++;
    if (reasons.size < 50) reasons.set(result.reason, (reasons.get(result.reason) ?? 0) + 1);
    return;
  }
  placed++;
  if (live === target) inventory.release(ring[head]!);
  else live++;
  ring[head] = holder;
  head = (head + 1) % target;
}

// fill the fleet to its working occupancy and warm the JIT
for (let i = 0; live < target && i < target * 4; i++) decide(i);
placed = 0;
refused = 0;

/** Wall seconds, and the CPU seconds the process used (user + system): steadier on a shared machine. */
function timed(run: () => void): { wall: number; cpu: number } {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  run();
  const c = process.cpuUsage(c0);
  return { wall: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6 };
}

const seconds = timed(() => {
  for (let i = 0; i < decisions; i++) decide(i);
});
const mixed = { placed, refused };

// the refusal path alone: it explains which constraint failed, so it does more work per decision
const unplaceable = requests.filter((r) => !inventory.placeAndReserve('probe', r).ok);
inventory.release('probe');
const refusalRuns = Math.min(decisions, 50_000);
const refusalSeconds = timed(() => {
  for (let i = 0; i < refusalRuns; i++) inventory.placeAndReserve('probe', unplaceable[i % unplaceable.length]!);
});
inventory.release('probe');

// GPUs reserved (interruptible pods' included: availability would count those as free)
const usedGpus = inventory.gpuUsage().reduce((n, u) => n + u.used, 0);
const mixedReclaims = reclaimedInMixed;

// --- the full fleet: every GPU held, most by interruptible pods; on-demand creates take them back --

const full = new Inventory({ hosts, catalog });
const oneGpu = (terms: Partial<PlacementRequest>): PlacementRequest => ({
  ...base,
  gpuTypeIds: [pick(gpuTypes)],
  cloud: 'ALL',
  portCount: 1,
  ...terms,
});
const spotHold = (): Partial<PlacementRequest> => ({ reclaimable: { rung: 'interruptible', bidPerGpu: bidOf() } });
let fullSerial = 0;
// a fifth on demand, then interruptible pods until every type refuses (nothing taken back while filling)
for (let misses = 0; misses < 500;) {
  const terms = random() < 0.2 ? {} : spotHold();
  misses = full.placeAndReserve(`f${fullSerial++}`, oneGpu(terms)).ok ? 0 : misses + 1;
}
const onDemandRing: string[] = [];
let fullDecisions = 0;
let preempting = 0;
let reclaimedHolds = 0;
let fullRefused = 0;
const fullRuns = Math.min(decisions, 25_000);
const fullSeconds = timed(() => {
  for (let i = 0; i < fullRuns; i++) {
    // an on-demand create finds the fleet full and takes back the lowest bid that makes room
    const id = `od${fullSerial++}`;
    const result = full.placeAndReserve(id, oneGpu({ gpuCount: pick([1, 1, 2]), reclaim: { kind: 'on-demand' } }));
    fullDecisions++;
    if (!result.ok) {
      fullRefused++;
      continue;
    }
    onDemandRing.push(id);
    if (result.reclaimed) {
      preempting++;
      reclaimedHolds += result.reclaimed.length;
    }
    // churn: an old on-demand pod ends, and a new interruptible pod bids for what it freed
    if (onDemandRing.length > 2000) full.release(onDemandRing.shift()!);
    const refill = full.placeAndReserve(
      `f${fullSerial++}`,
      oneGpu({ ...spotHold(), reclaim: { kind: 'bid', bidPerGpu: bidOf() } }),
    );
    fullDecisions++;
    if (!refill.ok) fullRefused++;
    else if (refill.reclaimed) reclaimedHolds += refill.reclaimed.length;
  }
});

console.log(
  `\nPlacement benchmark: ${hostCount} hosts (${totalGpus} GPUs, ${gpuTypes.length} types, ${cudas.length} CUDA versions), ` +
    `${live} live reservations, ${((usedGpus / totalGpus) * 100).toFixed(0)}% of GPUs in use\n`,
);
const row = (
  mix: string,
  n: number,
  { wall: secs, cpu }: { wall: number; cpu: number },
  ok: number | string,
  no: number | string,
  gated: boolean,
) => {
  const rate = n / secs;
  return {
    'fleet size': hostCount,
    mix,
    decisions: n,
    placed: ok,
    refused: no,
    'decisions/s': rate.toFixed(0),
    'µs/decision': ((secs * 1e6) / n).toFixed(1),
    'decisions/CPU-s': (n / cpu).toFixed(0),
    goal: gated ? `>= ${GOAL}` : '',
    verdict: gated ? (rate >= GOAL ? 'PASS' : 'FAIL') : '',
  };
};
printTable([
  row('mixed, with reserve+release churn', decisions, seconds, mixed.placed, mixed.refused, true),
  row('refusals only (reason computed)', refusalRuns, refusalSeconds, 0, refusalRuns, false),
  row(
    'full fleet: on-demand takes back spot',
    fullDecisions,
    fullSeconds,
    fullDecisions - fullRefused,
    fullRefused,
    false,
  ),
]);
console.log(
  `\nReclaim ladder: ${mixedReclaims} holds taken back in the mixed run; in the full fleet ${preempting} of ${fullRuns} on-demand creates took back ${reclaimedHolds} interruptible holds (with the spot refills' own).`,
);
console.log('\nSample refusal reasons:');
for (const [reason, n] of [...reasons].slice(0, 6)) console.log(`  ${n}× ${reason}`);
