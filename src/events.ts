import { EventEmitter } from 'node:events';
import type { PodStatus } from './domain/pod-state.js';

/** Typed in-process events; side effects (usage accounting, console feed, webhooks) subscribe. */
export interface EventMap {
  'pod:status': {
    podId: string;
    accountId: string;
    /** The pod's GPU type; null for a CPU pod. */
    gpuTypeId: string | null;
    from: PodStatus;
    to: PodStatus;
    at: number;
  };
  'job:queued': { endpointId: string; jobId: string; lowPriority: boolean };
  'job:completed': import('./jobs/job-view.js').JobEventPayload;
  'job:failed': import('./jobs/job-view.js').JobEventPayload;
  'job:timed_out': import('./jobs/job-view.js').JobEventPayload;
}

export class EventBus {
  readonly #emitter = new EventEmitter();
  constructor() {
    this.#emitter.setMaxListeners(100);
  }
  emit<K extends keyof EventMap>(name: K, payload: EventMap[K]): void {
    this.#emitter.emit(name, payload);
  }
  on<K extends keyof EventMap>(name: K, listener: (payload: EventMap[K]) => void): () => void {
    this.#emitter.on(name, listener);
    return () => this.#emitter.off(name, listener);
  }
}
