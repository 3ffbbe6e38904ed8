import type { WorkerStatus } from './worker-state.js';

/** `QB` queue-based (the job API) or `LB` load balancing. */
export type EndpointType = 'QB' | 'LB';

/** What the autoscaler targets: seconds of queue delay, or requests per worker. */
export type ScalerType = 'QUEUE_DELAY' | 'REQUEST_COUNT';

export const ENDPOINT_TYPES: readonly EndpointType[] = ['QB', 'LB'];
export const SCALER_TYPES: readonly ScalerType[] = ['QUEUE_DELAY', 'REQUEST_COUNT'];

/** A serverless endpoint as services see it. Times are epoch ms; lists are already split. */
export interface Endpoint {
  id: string;
  accountId: string;
  name: string;
  /** A serverless template of the account, or a public one. */
  templateId: string;
  type: EndpointType;
  /** GPU pools (tiers) the workers may run on, in preference order, e.g. `["ADA_24", "AMPERE_24"]`. */
  gpuIds: string[];
  /** GPUs per worker. */
  gpuCount: number;
  /**
   * CPU instances the workers may run on, in preference order (`cpu3g-4-16`: flavor, vCPUs, GB;
   * domain/endpoint-compute.ts). Non-empty makes it a CPU endpoint (and `gpuIds` empty).
   */
  instanceIds: string[];
  /** Country codes, or data-center ids, of where workers may run; empty = anywhere. */
  locations: string[];
  networkVolumeId: string | null;
  /** Seconds an idle worker stays up before it is stopped. */
  idleTimeout: number;
  scalerType: ScalerType;
  scalerValue: number;
  workersMin: number;
  workersMax: number;
  flashboot: boolean;
  /**
   * FlashBoot: seconds an idle worker is kept suspended before it is removed (a Gantry extension),
   * within `serverless.flashboot.maxKeepMs` at use.
   */
  flashBootKeepSeconds: number;
  /** Host CUDA versions workers may run on, `major.minor`; empty = any. */
  allowedCudaVersions: string[];
  /** Lowest host CUDA version workers may run on, `major.minor`; null = no bound. */
  minCudaVersion: string | null;
  /** Default execution timeout of the endpoint's jobs, ms; a job's policy overrides it. */
  executionTimeoutMs: number;
  /** Overrides of the template's env, per key. */
  env: Record<string, string>;
  createdAt: number;
  updatedAt: number;
  /** Starts at 1; every change adds 1. */
  version: number;
}

/** A serverless worker as the endpoint's worker list shows it. */
export interface EndpointWorker {
  id: string;
  endpointId: string;
  status: WorkerStatus;
  createdAt: number;
  lastPingAt: number | null;
  /** The endpoint version it was launched with; null when unknown (attached by hand). */
  endpointVersion: number | null;
  /** GPUs it holds (0 for CPU workers and those attached by hand). */
  gpuCount: number;
  gpuTypeId: string | null;
  dataCenterId: string | null;
  image: string | null;
}

/** One changed field of a release; `old`/`new` are JSON values, null when absent. */
export interface ReleaseDiffEntry {
  field: string;
  old: unknown;
  new: unknown;
}

/** A change of what an endpoint's workers run, and the endpoint version it produced. */
export interface EndpointRelease {
  id: string;
  endpointId: string;
  accountId: string;
  version: number;
  source: 'MANUAL';
  diff: ReleaseDiffEntry[];
  createdAt: number;
}
