/**
 * A test seam, not the agent: an in-process stand-in for `gantry agent` that applies a
 * FleetRuntime's operations on a real DockerRuntime, one at a time in the order they were
 * enqueued, and feeds back what that runtime says (its `onChange` as instance reports, each
 * operation's outcome as an ack) through `FleetRuntime.receive`, in the order it happened. No HTTP
 * and no stored queue: it lets the runtime contract run over FleetRuntime end to end on real
 * containers. The agent process (src/agent/) and the `/agent/v1` routes take its place in the
 * fleet's integration tests.
 *
 * Like the agent, it keeps the owner of each instance it started and the ids it stopped and kept,
 * reports an instance it stopped as kept, and reports in full (live instances and kept ones)
 * whenever it connects to a runtime, once the operations under way are done.
 */
import type { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import type { FleetRuntime } from '../../src/fleet/fleet-runtime.js';
import type { InstanceReport, NewOperation, Operation, OperationAck, ReportRequest } from '../../src/fleet/protocol.js';
import type { InstanceOwner, InstanceStatus } from '../../src/runtime/runtime.js';

export class LoopbackAgent {
  readonly #docker: DockerRuntime;
  #fleet: FleetRuntime | null = null;
  /** what was sent to the runtime, in order */
  #sent: Promise<unknown> = Promise.resolve();
  /** operations applied one after the other */
  #applying: Promise<unknown> = Promise.resolve();
  readonly #owners = new Map<string, InstanceOwner>();
  readonly #kept = new Set<string>();
  readonly #unsubscribe: () => void;
  #seq = 0;
  /** Every operation handed over, in order. */
  readonly operations: Operation[] = [];

  constructor(
    readonly hostId: string,
    docker: DockerRuntime,
  ) {
    this.#docker = docker;
    this.#unsubscribe = docker.onChange((status) => {
      const owner = this.#owners.get(status.id);
      if (owner) this.#send({ instances: { full: false, items: [report(status, owner)] } });
    });
  }

  /** The FleetRuntime's operation sink: stored (here: queued) and answered with its id at once, applied in turn. */
  readonly enqueue = async (hostId: string, op: NewOperation): Promise<Operation> => {
    if (hostId !== this.hostId) throw new Error(`no agent serves host ${hostId}`);
    this.#seq += 1;
    const operation = { ...op, id: `op-${this.#seq}`, seq: this.#seq };
    this.operations.push(operation);
    this.#applying = this.#applying.then(() => this.#apply(operation));
    return operation;
  };

  /** (Re)connects to `fleet`: from now on reports go to it, starting with a full one. */
  async connect(fleet: FleetRuntime): Promise<void> {
    await this.#applying;
    this.#fleet = fleet;
    const live = await this.#docker.list();
    const items = live.flatMap((s) => {
      const owner = this.#owners.get(s.id);
      return owner ? [report(s, owner)] : [];
    });
    for (const id of this.#kept) {
      const owner = this.#owners.get(id);
      if (owner) items.push({ id, owner, state: 'exited', startedAt: null, exitCode: null, reason: null, kept: true });
    }
    this.#send({ instances: { full: true, items } });
    await this.#sent;
  }

  /** Stops reporting, once what was applied has been sent. */
  async disconnect(): Promise<void> {
    await this.#applying;
    await this.#sent;
    this.#unsubscribe();
    this.#fleet = null;
  }

  async #apply(op: Operation): Promise<void> {
    let ack: OperationAck = { opId: op.id, ok: true };
    try {
      switch (op.kind) {
        case 'start':
          this.#owners.set(op.instanceId, op.spec.owner);
          this.#kept.delete(op.instanceId);
          await this.#docker.start(op.spec);
          break;
        case 'stop': {
          await this.#docker.stop(op.instanceId);
          const owner = this.#owners.get(op.instanceId);
          if (!owner) break;
          this.#kept.add(op.instanceId);
          this.#send({
            instances: {
              full: false,
              items: [
                {
                  id: op.instanceId,
                  owner,
                  state: 'exited',
                  startedAt: null,
                  exitCode: null,
                  reason: null,
                  kept: true,
                },
              ],
            },
          });
          break;
        }
        case 'remove':
          await this.#docker.remove(op.instanceId);
          this.#kept.delete(op.instanceId);
          this.#owners.delete(op.instanceId);
          break;
        case 'removeVolume':
          await this.#docker.removeVolume({ kind: 'network', volumeId: op.volumeId });
          break;
        case 'suspend':
        case 'resume':
          await this.#docker[op.kind](op.instanceId);
          break;
        case 'prepareImage':
          ack.result = await this.#docker.prepareImage(this.hostId, op);
          break;
        case 'discardImage':
          ack.result = { outcome: await this.#docker.discardImage(this.hostId, op.image) };
          break;
        case 'preparedImages':
          ack.result = { images: await this.#docker.preparedImages(this.hostId) };
          break;
        case 'stream':
          throw new Error('the loopback agent opens no streams');
        default:
          op satisfies never;
      }
    } catch (err) {
      ack = { opId: op.id, ok: false, error: (err as Error).message };
    }
    this.#send({ acks: [ack] });
  }

  #send(message: Pick<ReportRequest, 'instances' | 'acks'>): void {
    this.#sent = this.#sent.then(() => this.#fleet?.receive(this.hostId, message)).catch(() => undefined);
  }
}

const report = (s: InstanceStatus, owner: InstanceOwner): InstanceReport => ({
  id: s.id,
  owner,
  state: s.state,
  startedAt: s.startedAt,
  exitCode: s.exitCode,
  reason: s.reason,
});
