/**
 * The agent's side of its tunnels (docs/fleet.md "The tunnel", src/fleet/tunnel-mux.ts): a tunnel
 * the control plane asked for (a `stream` operation asking for `tunnel`, dialed back by the stream
 * dialer) carries streams the control plane opens, each to a port of an instance this agent runs.
 * The agent dials it with its runtime's `connect()` (the Docker runtime's: only its own running
 * containers, only their ports) and joins the two; anything else is refused with why.
 *
 * Bounded: tunnels held at once (a replica holds one each; past the bound a new one is refused),
 * streams per tunnel and connections being dialed at once per tunnel.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { DialTimeout } from '../runtime/dial.js';
import type { Runtime } from '../runtime/runtime.js';
import { TunnelMux } from '../fleet/tunnel-mux.js';
import type { TunnelStream } from '../fleet/tunnel-stream.js';

export interface AgentTunnelsDeps {
  runtime: Pick<Runtime, 'connect'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Tunnels held at once. @default 16 */
  maxTunnels?: number;
  /** Dialing a container's port gives up after this long. @default 10000 */
  dialTimeoutMs?: number;
}

/** Connections being dialed at once, per tunnel. */
const MAX_DIALING = 2048;
const KEEPALIVE_MS = 30_000;

export class AgentTunnels {
  readonly #deps: AgentTunnelsDeps;
  readonly #open = new Set<TunnelMux>();

  constructor(deps: AgentTunnelsDeps) {
    this.#deps = deps;
  }

  /** Tunnels held now. */
  get open(): number {
    return this.#open.size;
  }

  /** Why no tunnel more can be held now, or null. */
  refusal(): string | null {
    if (!this.#deps.runtime.connect) return "this agent's runtime cannot connect to its instances' ports";
    const max = this.#deps.maxTunnels ?? 16;
    return this.#open.size >= max ? `this agent already holds ${max} tunnels` : null;
  }

  /** Carries the tunnel dialed back on `socket` until either side closes it. */
  carry(socket: Duplex, head: Buffer): void {
    const s = socket as Partial<Socket>;
    // The dial-back's request timeout does not apply to the tunnel it became.
    s.setTimeout?.(0);
    s.setNoDelay?.(true);
    s.setKeepAlive?.(true, KEEPALIVE_MS);
    let dialing = 0;
    const mux: TunnelMux = new TunnelMux(socket, head, {
      side: 'agent',
      accept: (stream, target) => {
        stream.on('error', () => undefined);
        if (dialing >= MAX_DIALING) {
          mux.refuse(stream, `the host is already opening ${MAX_DIALING} connections`);
          return;
        }
        dialing += 1;
        void this.#dial(mux, stream, target.instanceId, target.port).finally(() => (dialing -= 1));
      },
      onClose: (err) => {
        this.#open.delete(mux);
        this.#deps.logger.info({ reason: err?.message ?? 'closed' }, 'a tunnel ended');
      },
    });
    this.#open.add(mux);
  }

  close(): void {
    for (const mux of [...this.#open]) mux.close();
  }

  async #dial(mux: TunnelMux, stream: TunnelStream, instanceId: string, port: number): Promise<void> {
    let upstream: Duplex;
    try {
      upstream = await this.#deps.runtime.connect!(instanceId, port, {
        timeoutMs: this.#deps.dialTimeoutMs ?? 10_000,
      });
    } catch (err) {
      if (!stream.destroyed) mux.refuse(stream, (err as Error).message, err instanceof DialTimeout);
      return;
    }
    if (stream.destroyed || mux.closed) {
      upstream.destroy();
      return;
    }
    mux.opened(stream);
    // Joined both ways: either side's end is passed on (a half-close too), either's failure ends both.
    // (An error after the container's end, a write to its closed half, loses nothing it sent.)
    upstream.on('error', (err: Error) => (upstream.readableEnded ? stream.end() : stream.destroy(err)));
    stream.once('close', () => upstream.destroy());
    upstream.pipe(stream);
    stream.pipe(upstream);
  }
}
