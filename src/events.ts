import { EventEmitter } from 'node:events';
import type { JobEventMap } from './jobs/job-events.js';
import type { PodEventMap } from './pods/pod-events.js';

/** Typed in-process events, each declared by the service that emits it; side effects (usage accounting, console feed, webhooks) subscribe. */
export type EventMap = PodEventMap & JobEventMap;

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
