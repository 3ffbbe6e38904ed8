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
import type { AgentTunnelLimits } from '../fleet/protocol.js';
import { DialTimeout } from '../runtime/dial.js';
import type { Runtime } from '../runtime/runtime.js';
import { TunnelMux } from '../fleet/tunnel-mux.js';
import type { TunnelStream } from '../fleet/tunnel-stream.js';

export interface AgentTunnelsDeps {
  runtime: Pick<Runtime, 'connect'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Dialing a container's port gives up after this long. @default 10000 */
  dialTimeoutMs?: number;
}

/** The bounds kept when the control plane names none (an older one), and the most it may name. */
const DEFAULT_LIMITS: AgentTunnelLimits = {
  maxStreams: 8192,
  maxTunnels: 16,
  maxDialing: 2048,
  maxWindow: 4 * 1024 * 1024,
};
const MOST: AgentTunnelLimits = {
  maxStreams: 65_536,
  maxTunnels: 1024,
  maxDialing: 65_536,
  maxWindow: 16 * 1024 * 1024,
};
const KEEPALIVE_MS = 30_000;

/** The control plane's bounds, each a whole number from 1 to its most, else the default. */
export function agentTunnelLimits(
  asked: Partial<Record<keyof AgentTunnelLimits, unknown>> | undefined,
): AgentTunnelLimits {
  const pick = (key: keyof AgentTunnelLimits): number => {
    const v = asked?.[key];
    return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MOST[key] ? v : DEFAULT_LIMITS[key];
  };
  return {
    maxStreams: pick('maxStreams'),
    maxTunnels: pick('maxTunnels'),
    maxDialing: pick('maxDialing'),
    maxWindow: pick('maxWindow'),
  };
}

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

  /** Why no tunnel more can be held now (`limits.maxTunnels`), or null. */
  refusal(limits: AgentTunnelLimits = DEFAULT_LIMITS): string | null {
    if (!this.#deps.runtime.connect) return "this agent's runtime cannot connect to its instances' ports";
    const max = limits.maxTunnels;
    return this.#open.size >= max ? `this agent already holds ${max} tunnels` : null;
  }

  /** Carries the tunnel dialed back on `socket` until either side closes it, within `limits`. */
  carry(socket: Duplex, head: Buffer, limits: AgentTunnelLimits = DEFAULT_LIMITS): void {
    const s = socket as Partial<Socket>;
    // The dial-back's request timeout does not apply to the tunnel it became.
    s.setTimeout?.(0);
    s.setNoDelay?.(true);
    s.setKeepAlive?.(true, KEEPALIVE_MS);
    let dialing = 0;
    const mux: TunnelMux = new TunnelMux(socket, head, {
      side: 'agent',
      maxStreams: limits.maxStreams,
      maxWindow: limits.maxWindow,
      accept: (stream, target) => {
        stream.on('error', () => undefined);
        if (dialing >= limits.maxDialing) {
          mux.refuse(stream, `the host is already opening ${limits.maxDialing} connections`);
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
