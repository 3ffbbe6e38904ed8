/**
 * What the load balancer (lb-pool.ts) knows of a load-balancing endpoint's worker, what it lends a
 * request (`LbLease`), and what the autoscaler reads of its traffic (`LbTraffic`).
 */

/** A launched worker of a load-balancing endpoint: where its application and its health path are. */
export interface LbWorkerInfo {
  workerId: string;
  endpointId: string;
  accountId: string;
  /** `PORT`: where requests go (inside the instance) */
  port: number;
  /** `PORT_HEALTH` */
  healthPort: number;
  /** `HEALTH_CHECK_PATH`, with its leading slash */
  healthPath: string;
  /**
   * Learnt from the store, not launched by this replica's autoscaler (lb-replicas.ts): its host
   * ports by private port, as the launching replica recorded them.
   */
  hostPorts?: Readonly<Record<number, number>>;
}

/** What the autoscaler reads of an endpoint's traffic. */
export interface LbTraffic {
  /** Requests waiting for a ready worker. */
  waiting(endpointId: string): number;
  /** Requests a worker holds now. */
  inFlight(endpointId: string): number;
  /** A worker's readiness, requests held and last activity; null when it is not a balanced worker. */
  workerState(workerId: string): { ready: boolean; outstanding: number; lastActiveAt: number } | null;
  /** Requests pinned `strict-resume` to the worker, waiting for it (FlashBoot resumes it for them). */
  resumeWanted(workerId: string): number;
  /**
   * Requests waiting with a soft `X-Runpod-Worker-Id` naming the worker: when it is suspended and
   * demand resumes workers, it is resumed before others (it holds what the requests' affinity is for).
   */
  preferredWaiting(workerId: string): number;
}

/** A worker taken for one request; `release` once its answer ended (idempotent). */
export interface LbLease {
  workerId: string;
  port: number;
  release(): void;
  /**
   * Releases it because its port could not be reached (`why`): the worker is unhealthy, and takes
   * no request, until a health check finds it ready again (it may have stopped, on another replica's
   * word, before this replica's pool heard of it).
   */
  unreachable(why: string): void;
}
