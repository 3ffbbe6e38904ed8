/**
 * What the fleet service's replicas tell each other through the notify relay (PostgreSQL), and
 * what one does with what the others said: an operation queued (its host's long-polls read
 * again), a host joined, changed its capacity or was revoked (read back and announced here), an
 * operation acknowledged (read back, announced as relayed), full reports asked of every host.
 */
import type { Logger } from 'pino';
import { publicHost, type FleetEmitter } from './fleet-events.js';
import type { HostStore } from './host-store.js';
import { ackedOperation, FLEET_OPS_TOPIC } from './operation-queue.js';
import type { OperationStore } from './operation-store.js';

/** Relay topics: host lifecycle (key `<joined|capacity|revoked>:<hostId>`, or `resync:*`), and acknowledged operations (key the operation id). */
export const FLEET_HOST_TOPIC = 'fleet-host';
export const FLEET_ACK_TOPIC = 'fleet-ack';
export const FLEET_TOPICS: readonly string[] = [FLEET_OPS_TOPIC, FLEET_HOST_TOPIC, FLEET_ACK_TOPIC];

export interface RelayedFleetNoticesDeps {
  hosts: Pick<HostStore, 'getHost'>;
  operations: Pick<OperationStore, 'get'>;
  events: FleetEmitter;
  /** Wakes the host's long-polls here: an operation was queued on another replica. */
  wake(hostId: string): void;
  /** A host revoked on another replica. */
  revoked(hostId: string, at: number): void;
  /** Another replica asked every host for a full report. */
  resync(): void;
  logger?: Pick<Logger, 'warn'>;
}

/** The notifications another replica relayed here (topics {@link FLEET_TOPICS}). */
export class RelayedFleetNotices {
  readonly #deps: RelayedFleetNoticesDeps;
  /** Relayed acknowledgements waiting to be read (next turn of the event loop). */
  #relayedAcks = new Set<string>();

  constructor(deps: RelayedFleetNoticesDeps) {
    this.#deps = deps;
  }

  deliver(topic: string, key: string): void {
    if (topic === FLEET_OPS_TOPIC) return this.#deps.wake(key);
    if (topic === FLEET_ACK_TOPIC) {
      this.#relayedAcks.add(key);
      if (this.#relayedAcks.size === 1) setImmediate(() => void this.#readRelayedAcks());
      return;
    }
    if (topic === FLEET_HOST_TOPIC) void this.#hostChanged(key);
  }

  async #hostChanged(key: string): Promise<void> {
    const [kind, hostId] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
    if (kind === 'resync') {
      this.#deps.resync();
      return;
    }
    try {
      const host = await this.#deps.hosts.getHost(hostId);
      if (!host) return;
      if (host.revokedAt !== null) return this.#deps.revoked(hostId, host.revokedAt);
      if (kind === 'joined') this.#deps.events.emit('host:joined', publicHost(host));
      else if (kind === 'capacity') this.#deps.events.emit('host:capacity', publicHost(host));
    } catch (err) {
      this.#deps.logger?.warn({ hostId, err: (err as Error).message }, 'reading a host another replica changed failed');
    }
  }

  async #readRelayedAcks(): Promise<void> {
    const ids = [...this.#relayedAcks];
    this.#relayedAcks = new Set();
    try {
      const byHost = new Map<string, ReturnType<typeof ackedOperation>[]>();
      for (const row of await this.#deps.operations.get(ids)) {
        if (row.state !== 'acked') continue;
        byHost.set(row.hostId, [...(byHost.get(row.hostId) ?? []), ackedOperation(row)]);
      }
      for (const [hostId, acks] of byHost) this.#deps.events.emit('acks', { hostId, acks, relayed: true });
    } catch (err) {
      this.#deps.logger?.warn(
        { err: (err as Error).message },
        'reading operations acknowledged on another replica failed',
      );
    }
  }
}
