/**
 * What the fleet service tells its listeners (the fleet runtime, the inventory): a small typed
 * emitter. A listener that throws is logged and does not stop the others or the request that
 * caused the event.
 */
import type { Cloud } from '../domain/catalog.js';
import type { InstanceStats } from '../runtime/runtime.js';
import type { HostRecord } from './host-store.js';
import type { HostCapacity, InstanceReport, OperationKind, OperationResult } from './protocol.js';

/** A joined host, without its credential hash. */
export interface FleetHost {
  id: string;
  name: string;
  dataCenterId: string;
  cloud: Cloud;
  publicIp: string;
  portRange: [number, number];
  capacity: HostCapacity;
  agentVersion: string;
  joinedAt: number;
  /** last report or poll, as written to the database (every few seconds) */
  lastReportAt: number | null;
  revokedAt: number | null;
}

/** A host's record as listeners and clients see it: without its credential hash. */
export const publicHost = ({ credentialHash: _hash, ...host }: HostRecord): FleetHost => host;

/** An operation the agent acknowledged. */
export interface AckedOperation {
  opId: string;
  hostId: string;
  seq: number;
  kind: OperationKind;
  instanceId: string | null;
  volumeId: string | null;
  ok: boolean;
  /** why it failed, when `ok` is false */
  error: string | null;
  /** an image operation's result, as the agent sent it (not stored: only the replica it reported to has it, and journals it) */
  result?: OperationResult;
  at: number;
}

export interface FleetEvents {
  /** A host joined (on every replica: the others learn it through the notify relay). */
  'host:joined': FleetHost;
  /** A host reported a different capacity (on every replica). */
  'host:capacity': FleetHost;
  /** A host was revoked: through the service, the CLI, or another replica (on every replica). */
  'host:revoked': { hostId: string; at: number };
  /** The host's agent reported or polled (only on the replica it talks to). */
  'host:seen': { hostId: string; at: number };
  /**
   * Instances the agent reported, minus those the ownership check refused (only on the replica the
   * agent talks to). `full`: every instance the agent has; what is missing is gone.
   */
  instances: { hostId: string; full: boolean; items: InstanceReport[] };
  /**
   * Operations acknowledged for the first time (on every replica). `relayed`: acknowledged through
   * another replica (a replica with the fleet journal learns them from it instead, in order with
   * that replica's reports).
   */
  acks: { hostId: string; acks: AckedOperation[]; relayed: boolean };
  /** The host's live instances' utilisation, as its agent last sampled it (only on the replica it talks to). */
  stats: { hostId: string; stats: Record<string, InstanceStats> };
}

export type FleetListener<K extends keyof FleetEvents> = (payload: FleetEvents[K]) => void;

export class FleetEmitter {
  readonly #listeners = new Map<keyof FleetEvents, Set<(payload: never) => void>>();

  constructor(private readonly onListenerError: (name: string, err: unknown) => void = () => {}) {}

  /** Registers a listener; answers the function that removes it. */
  on<K extends keyof FleetEvents>(name: K, listener: FleetListener<K>): () => void {
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    set.add(listener);
    return () => void set.delete(listener);
  }

  emit<K extends keyof FleetEvents>(name: K, payload: FleetEvents[K]): void {
    const set = this.#listeners.get(name);
    if (!set) return;
    for (const listener of set) {
      try {
        (listener as FleetListener<K>)(payload);
      } catch (err) {
        this.onListenerError(name, err);
      }
    }
  }

  listens(name: keyof FleetEvents): boolean {
    return (this.#listeners.get(name)?.size ?? 0) > 0;
  }
}
