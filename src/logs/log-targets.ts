/**
 * What a log stream reads: a pod or a serverless worker of the caller's account (another
 * account's, or an unknown one, is a 404 like its GET), and whether it runs or is about to.
 */
import { notFound } from '../domain/errors.js';
import { isLivePodStatus } from '../domain/pod-state.js';
import type { PodStore } from '../store/pod-store.js';
import type { LogTarget } from './log-streams.js';

/**
 * The services it asks, declared here rather than imported: the pods and serverless services
 * write to the logs (`SystemLog`), so the logs folder names neither.
 */
export interface LogTargetsDeps {
  /** `PodsService`: throws 404 for a pod the account does not hold. */
  pods: { get(accountId: string, podId: string): Promise<unknown> };
  podStore: Pick<PodStore, 'get'>;
  /** `EndpointsService`: an endpoint's workers, 404 for one the account does not hold. */
  endpoints: { workers(accountId: string, endpointId: string): Promise<Array<{ id: string; status: string }>> };
}

export class LogTargets {
  readonly #d: LogTargetsDeps;

  constructor(deps: LogTargetsDeps) {
    this.#d = deps;
  }

  /** The pod's logs; followed while it is meant to run and not stopped. */
  async pod(accountId: string, podId: string): Promise<LogTarget> {
    await this.#d.pods.get(accountId, podId);
    return {
      instanceId: podId,
      alive: async () => {
        const pod = await this.#d.podStore.get(podId);
        return pod !== null && pod.desiredStatus === 'RUNNING' && isLivePodStatus(pod.status);
      },
    };
  }

  /** The worker's logs; followed until it is dead. */
  async worker(accountId: string, endpointId: string, workerId: string): Promise<LogTarget> {
    const status = async (): Promise<string | null> =>
      (await this.#d.endpoints.workers(accountId, endpointId)).find((w) => w.id === workerId)?.status ?? null;
    if ((await status()) === null) throw notFound('worker', workerId);
    return {
      instanceId: workerId,
      alive: async () => {
        const s = await status().catch(() => null);
        return s !== null && s !== 'dead';
      },
    };
  }
}
