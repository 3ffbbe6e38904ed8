/**
 * What of the fleet runtime reaches into a host through its agent (fleet-runtime.ts): an
 * instance's output and a shell in it (streams the agent dials back, fleet-streams.ts), and a
 * connection to one of its ports (a stream of the host's tunnel, fleet-tunnels.ts). Each says at
 * once, rather than after a timeout, when the instance does not run or its host is away.
 */
import type { Duplex } from 'node:stream';
import type { OutputLine, OutputQuery, ShellRequest, ShellSession } from '../runtime/runtime.js';
import { hostAway } from './fleet-instances.js';
import type { FleetLedger } from './fleet-ledger.js';
import type { FleetStreams } from './fleet-streams.js';
import type { FleetTunnels } from './fleet-tunnels.js';

export class AgentReach {
  readonly #ledger: FleetLedger;
  streams: Pick<FleetStreams, 'output' | 'shell'> | null = null;
  tunnels: Pick<FleetTunnels, 'connect' | 'close'> | null = null;

  constructor(ledger: FleetLedger) {
    this.#ledger = ledger;
  }

  /** One read of the instance's output on its host (the runtime shares it among followers). */
  async *output(id: string, query: OutputQuery): AsyncGenerator<OutputLine> {
    const hostId = await this.#hostOf(id);
    if (hostId === null || !this.streams) return;
    const host = this.#ledger.table.knownHost(hostId);
    // Said at once rather than after the stream's connect timeout: nobody would dial back.
    const away = hostAway(host);
    if (away !== null)
      throw new Error(
        host!.revokedAt !== null
          ? `${away}: its output is out of reach`
          : `${away}: the output stays on the host until its agent is back`,
      );
    yield* this.streams.output(hostId, id, query);
  }

  async shell(id: string, request: ShellRequest): Promise<ShellSession> {
    const hostId = this.#runningOn(id);
    if (!this.streams) throw new Error('this control plane opens no streams to its agents');
    return this.streams.shell(hostId, id, request);
  }

  async connect(id: string, port: number, timeoutMs: number): Promise<Duplex> {
    const hostId = this.#runningOn(id);
    if (!this.tunnels) throw new Error('this control plane opens no tunnels to its agents');
    return this.tunnels.connect(hostId, { instanceId: id, port }, timeoutMs);
  }

  /** The host of a running instance; throws, saying why, when it does not run (its host away included). */
  #runningOn(id: string): string {
    const t = this.#ledger.table.tracked.get(id);
    const visible = t ? this.#ledger.table.visible(t) : null;
    if (!t || visible?.state !== 'running')
      throw new Error(`instance "${id}" is not running${visible?.reason ? ` (${visible.reason})` : ''}`);
    return t.hostId;
  }

  async #hostOf(id: string): Promise<string | null> {
    const known = this.#ledger.table.hostIdOf(id);
    if (known !== undefined) return known;
    return (await this.#ledger.deps.placements.placed([id])).get(id)?.hostId ?? null;
  }
}
