/**
 * The per-account quotas, pure: whether one more resource (a pod, its GPUs, a worker's GPUs) or
 * one more job (its bytes) fits what the account already holds, and, when it does not, the
 * sentence that says which quota and its value. Callers gather what is held; nothing here reads.
 */

/** The quota values (config `quotas`). */
export interface Quotas {
  pods: number;
  gpus: number;
  /** Clusters held at once: each takes one network of the shared pool (docs/clusters.md). */
  clusters: number;
  queuedJobs: number;
  storedJobBytes: number;
  streamBytesPerJob: number;
  /** Live read and write API keys an account holds (keys made over REST are refused past it). */
  apiKeys: number;
}

/** What an account holds that the resource quotas count. */
export interface ResourceHoldings {
  /** Pods in every status but TERMINATED. */
  pods: number;
  /** GPUs reserved by its pods meant to run and by its serverless workers. */
  gpus: number;
}

/** What is about to be added: a pod create is { pods: 1, gpus: n }, a start or a worker { pods: 0, gpus: n }. */
export type ResourceDemand = ResourceHoldings;

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Why `demand` does not fit beside `held` under `quotas`; null when it fits. */
export function resourceQuotaRefusal(
  held: ResourceHoldings,
  demand: ResourceDemand,
  quotas: Pick<Quotas, 'pods' | 'gpus'>,
): string | null {
  if (demand.pods > 0 && held.pods + demand.pods > quotas.pods)
    return `The account holds ${plural(held.pods, 'pod')} (every status but TERMINATED), its quota (quotas.pods = ${quotas.pods}); terminate a pod first.`;
  if (demand.gpus > 0 && held.gpus + demand.gpus > quotas.gpus)
    return (
      `The account holds ${plural(held.gpus, 'GPU')} (its running pods and serverless workers); ${plural(demand.gpus, 'more GPU', 'more GPUs')} would exceed its quota ` +
      `(quotas.gpus = ${quotas.gpus}); stop or terminate a pod, or lower an endpoint's workers, first.`
    );
  return null;
}

/** Why one more cluster beside the `held` ones is refused; null when it fits. */
export function clusterQuotaRefusal(held: number, quotas: Pick<Quotas, 'clusters'>): string | null {
  if (held + 1 > quotas.clusters)
    return `The account holds ${plural(held, 'cluster')}, its quota (quotas.clusters = ${quotas.clusters}); each takes one of the cluster networks every account shares. Delete a cluster first.`;
  return null;
}

/** Why one more API key beside the `held` live ones is refused; null when it fits. */
export function apiKeyQuotaRefusal(held: number, quotas: Pick<Quotas, 'apiKeys'>): string | null {
  if (held + 1 > quotas.apiKeys)
    return `The account holds ${plural(held, 'live API key')}, its quota (quotas.apiKeys = ${quotas.apiKeys}); revoke a key first.`;
  return null;
}

/** An account's stored jobs, as the job quotas count them. */
export interface JobHoldings {
  /** Jobs IN_QUEUE, across the account's endpoints. */
  queuedJobs: number;
  /** Bytes of job inputs, outputs, errors and buffered stream chunks. */
  storedBytes: number;
}

/** Why a submission of `bytes` (its input) is refused; null when it fits. */
export function submitQuotaRefusal(
  held: JobHoldings,
  bytes: number,
  quotas: Pick<Quotas, 'queuedJobs' | 'storedJobBytes'>,
): string | null {
  if (held.queuedJobs + 1 > quotas.queuedJobs)
    return `The account has ${plural(held.queuedJobs, 'job')} queued, its quota (quotas.queuedJobs = ${quotas.queuedJobs}); retry once workers have taken some.`;
  return storedBytesRefusal(held, bytes, quotas);
}

/** Why storing `bytes` more of job data (an input, an output, a stream chunk) is refused; null when it fits. */
export function storedBytesRefusal(
  held: JobHoldings,
  bytes: number,
  quotas: Pick<Quotas, 'storedJobBytes'>,
): string | null {
  if (held.storedBytes + bytes > quotas.storedJobBytes)
    return (
      `The account stores ${held.storedBytes} bytes of job inputs, outputs and stream chunks; ${bytes} more would exceed its quota ` +
      `(quotas.storedJobBytes = ${quotas.storedJobBytes}); retry once finished jobs have expired or their stream chunks have been read.`
    );
  return null;
}

/** Why a stream chunk of `bytes` for a job already buffering `buffered` bytes is refused; null when it fits. */
export function streamQuotaRefusal(
  jobId: string,
  buffered: number,
  bytes: number,
  quotas: Pick<Quotas, 'streamBytesPerJob'>,
): string | null {
  if (buffered + bytes > quotas.streamBytesPerJob)
    return (
      `Job ${jobId} buffers ${buffered} bytes of stream chunks no client has read; ${bytes} more would exceed the per-job quota ` +
      `(quotas.streamBytesPerJob = ${quotas.streamBytesPerJob}); the chunk is dropped, the job goes on.`
    );
  return null;
}
