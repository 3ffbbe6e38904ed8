import { EventEmitter } from 'node:events';
import type { JobEventPayload } from './job-view.js';

/** Job events; webhooks (through the outbox), metrics and the console feed subscribe. */
export interface JobEventMap {
  /** A job was committed to the queue (the autoscaler wakes on it). */
  'job:queued': { endpointId: string; jobId: string; lowPriority: boolean };
  'job:completed': JobEventPayload;
  'job:failed': JobEventPayload;
  'job:timed_out': JobEventPayload;
}

/** Where the service emits; the app's `EventBus` fits, and so does `JobEvents`. */
export interface JobEventSink {
  emit<K extends keyof JobEventMap>(name: K, payload: JobEventMap[K]): void;
}

/** A typed emitter of job events, for use without the app's EventBus. */
export class JobEvents implements JobEventSink {
  readonly #emitter = new EventEmitter();
  emit<K extends keyof JobEventMap>(name: K, payload: JobEventMap[K]): void {
    this.#emitter.emit(name, payload);
  }
  on<K extends keyof JobEventMap>(name: K, listener: (payload: JobEventMap[K]) => void): () => void {
    this.#emitter.on(name, listener);
    return () => this.#emitter.off(name, listener);
  }
}
