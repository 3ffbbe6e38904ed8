import type { PodStatus } from '../domain/pod-state.js';

/** Pod events; the SSH proxy (closing a stopped pod's sessions), metrics and the console feed subscribe. */
export interface PodEventMap {
  'pod:status': {
    podId: string;
    accountId: string;
    /** The pod's GPU type; null for a CPU pod. */
    gpuTypeId: string | null;
    from: PodStatus;
    to: PodStatus;
    at: number;
  };
}

/** Where the pods service emits; the app's `EventBus` fits. */
export interface PodEventSink {
  emit<K extends keyof PodEventMap>(name: K, payload: PodEventMap[K]): void;
}

/** Where a subscriber hears of pods; the app's `EventBus` fits. */
export interface PodEventSource {
  on<K extends keyof PodEventMap>(name: K, listener: (payload: PodEventMap[K]) => void): () => void;
}
