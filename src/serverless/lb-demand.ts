/**
 * What the balancer (lb-pool.ts) holds per worker and per waiting request, and the demand it
 * writes for the other replicas and the autoscaler (lb-replicas.ts): per endpoint, the requests
 * waiting and held; per worker, the requests it holds from this replica, its last finish, and the
 * requests waiting for it by name (`strict-resume`, or softly).
 */
import type { LbEndpointDemand } from '../store/lb-demand-store.js';
import type { LbLease, LbWorkerInfo } from './lb-traffic.js';

export type LbHealth = 'initializing' | 'ready' | 'unhealthy' | 'suspended';

export interface Entry extends LbWorkerInfo {
  health: LbHealth;
  everReady: boolean;
  outstanding: number;
  /** Requests other replicas' balancers hold on it, as they last wrote (lb-replicas.ts). */
  elsewhere: number;
  lastActiveAt: number;
  /** a pick counter, so that ties go round */
  lastPicked: number;
  probing: boolean;
  /** it took a request of this replica's (its activity is part of this replica's demand) */
  served: boolean;
}

export interface Waiter {
  endpointId: string;
  preferred: string | null;
  /** only `preferred` will do (strict affinity) */
  strict: boolean;
  /** strict-resume: `preferred` is to be resumed for it when suspended */
  resume: boolean;
  done(lease: LbLease | null | 'gone' | 'suspended'): void;
}

/** This replica's demand (LbPool.demand): endpoints with no request waiting or held, and no worker it sent one to, are left out. */
export function demandOf(
  waiters: Iterable<Waiter>,
  workers: ReadonlyMap<string, Entry>,
  inFlight: ReadonlyMap<string, number>,
): LbEndpointDemand[] {
  const out = new Map<string, LbEndpointDemand>();
  const of = (endpointId: string): LbEndpointDemand => {
    let d = out.get(endpointId);
    if (!d) out.set(endpointId, (d = { endpointId, waiting: 0, inFlight: inFlight.get(endpointId) ?? 0, workers: {} }));
    return d;
  };
  for (const w of waiters) {
    const d = of(w.endpointId);
    d.waiting++;
    if ((w.strict && !w.resume) || w.preferred === null) continue;
    const e = workers.get(w.preferred);
    const entry = (d.workers[w.preferred] ??= {
      outstanding: e?.outstanding ?? 0,
      lastActiveAt: e?.lastActiveAt ?? 0,
    });
    if (w.resume) entry.resumeWanted = (entry.resumeWanted ?? 0) + 1;
    else entry.preferredWaiting = (entry.preferredWaiting ?? 0) + 1;
  }
  for (const endpointId of inFlight.keys()) of(endpointId);
  for (const e of workers.values())
    if (e.served) {
      const d = of(e.endpointId);
      d.workers[e.workerId] = { ...d.workers[e.workerId], outstanding: e.outstanding, lastActiveAt: e.lastActiveAt };
    }
  return [...out.values()];
}
