/**
 * The control plane's tunnels to its agents (docs/fleet.md "The tunnel"): connections to the ports
 * of a host's instances (the pod HTTP proxy's way in, `FleetRuntime.connect()`), each a stream of
 * one long-lived connection the host's agent dialed back (tunnel-mux.ts), however many there are.
 * A host needs no inbound port, and a thousand WebSockets to its pods are one connection to the
 * control plane, not a thousand.
 *
 * Each replica asks for a tunnel of its own when it first needs one (a `stream` operation asking
 * for `tunnel`, dialed back like any stream: fleet-streams.ts) and keeps it while it is used: the
 * agent need not know the replicas (its `--server` may be one balanced URL), and only the replica
 * that asked can be reached through the session. A tunnel without streams for `idleMs` is closed;
 * one that drops ends its streams (their readers see an error) and the next connect asks again.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { DialTimeout } from '../runtime/dial.js';
import type { TunnelLimits } from './agents-config.js';
import type { AgentTunnelLimits } from './protocol.js';
import type { TunnelProtocolReason } from './tunnel-frames.js';
import { TunnelMux, type TunnelTarget } from './tunnel-mux.js';

export interface FleetTunnelsDeps {
  /** A connection the host's agent dialed back for a tunnel (FleetStreams.tunnel), asked to keep `limits`. */
  dialBack(hostId: string, signal: AbortSignal, limits: AgentTunnelLimits): Promise<{ socket: Duplex; head: Buffer }>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** The tunnels' bounds (config `fleet.tunnels`); each absent one is its default. */
  config?: Partial<TunnelLimits>;
}

/** Tunnels open now, the streams they carry, and the tunnels ended so far by the agent breaking the protocol, by why. */
export interface TunnelCounts {
  tunnels: number;
  streams: number;
  protocolErrors: Readonly<Partial<Record<TunnelProtocolReason, number>>>;
}

interface Tunnel {
  /** null while the agent has not dialed back */
  mux: TunnelMux | null;
  ready: Promise<TunnelMux>;
  idle: NodeJS.Timeout | null;
}

/** The defaults of config `fleet.tunnels` (src/fleet/config.ts). */
const DEFAULT_LIMITS: TunnelLimits = {
  maxStreams: 8192,
  maxTunnelsPerAgent: 16,
  maxDialing: 2048,
  idleMs: 300_000,
  maxWindowBytes: 4 * 1024 * 1024,
};
/** How often TCP checks a quiet tunnel's connection is still there. */
const KEEPALIVE_MS = 30_000;

export class FleetTunnels {
  readonly #deps: FleetTunnelsDeps;
  readonly #limits: TunnelLimits;
  readonly #protocolErrors: Partial<Record<TunnelProtocolReason, number>> = {};
  /** host id → its tunnel (being dialed back, or open) */
  readonly #tunnels = new Map<string, Tunnel>();
  readonly #stopping = new AbortController();

  constructor(deps: FleetTunnelsDeps) {
    this.#deps = deps;
    this.#limits = { ...DEFAULT_LIMITS, ...deps.config };
  }

  /** Tunnels open now, the streams they carry, and the tunnels protocol errors ended. */
  get open(): TunnelCounts {
    let tunnels = 0;
    let streams = 0;
    for (const t of this.#tunnels.values())
      if (t.mux && !t.mux.closed) {
        tunnels += 1;
        streams += t.mux.streams;
      }
    return { tunnels, streams, protocolErrors: { ...this.#protocolErrors } };
  }

  /**
   * A connection to `target` on `hostId`, through its tunnel (asked for when there is none).
   * Rejects with a {@link DialTimeout} when the tunnel or the port's connection is not had within
   * `timeoutMs`, and with the agent's reason when it refuses (no such instance here, nothing listens).
   */
  async connect(hostId: string, target: TunnelTarget, timeoutMs: number): Promise<Duplex> {
    if (this.#stopping.signal.aborted) throw new Error('the control plane is shutting down');
    const started = Date.now();
    const tunnel = this.#tunnel(hostId);
    const mux = tunnel.mux && !tunnel.mux.closed ? tunnel.mux : await withTimeout(tunnel.ready, hostId, timeoutMs);
    if (tunnel.idle) clearTimeout(tunnel.idle);
    tunnel.idle = null;
    try {
      const stream = await mux.open(target, Math.max(1, timeoutMs - (Date.now() - started)));
      stream.once('close', () => this.#maybeIdle(hostId, tunnel));
      return stream;
    } catch (err) {
      this.#maybeIdle(hostId, tunnel);
      throw err;
    }
  }

  /** Closes every tunnel (their streams end). */
  close(): void {
    this.#stopping.abort();
    for (const t of this.#tunnels.values()) {
      if (t.idle) clearTimeout(t.idle);
      t.mux?.close();
    }
    this.#tunnels.clear();
  }

  #tunnel(hostId: string): Tunnel {
    const known = this.#tunnels.get(hostId);
    if (known && (known.mux === null || !known.mux.closed)) return known;
    const tunnel: Tunnel = { mux: null, ready: null as unknown as Promise<TunnelMux>, idle: null };
    const limits = this.#limits;
    const agentLimits: AgentTunnelLimits = {
      maxStreams: limits.maxStreams,
      maxTunnels: limits.maxTunnelsPerAgent,
      maxDialing: limits.maxDialing,
      maxWindow: limits.maxWindowBytes,
    };
    tunnel.ready = this.#deps.dialBack(hostId, this.#stopping.signal, agentLimits).then(
      ({ socket, head }) => {
        (socket as Partial<Socket>).setNoDelay?.(true);
        (socket as Partial<Socket>).setKeepAlive?.(true, KEEPALIVE_MS);
        const mux = new TunnelMux(socket, head, {
          side: 'control',
          maxStreams: limits.maxStreams,
          maxWindow: limits.maxWindowBytes,
          onProtocolError: (reason) => (this.#protocolErrors[reason] = (this.#protocolErrors[reason] ?? 0) + 1),
          onClose: (err) => {
            if (this.#tunnels.get(hostId) === tunnel) this.#tunnels.delete(hostId);
            if (tunnel.idle) clearTimeout(tunnel.idle);
            if (err) this.#deps.logger.warn({ hostId, reason: err.message }, "the host's tunnel ended");
          },
        });
        tunnel.mux = mux;
        if (this.#stopping.signal.aborted) mux.close();
        this.#deps.logger.info({ hostId }, "the host's agent opened a tunnel");
        this.#maybeIdle(hostId, tunnel);
        return mux;
      },
      (err: unknown) => {
        if (this.#tunnels.get(hostId) === tunnel) this.#tunnels.delete(hostId);
        throw new Error(`host ${hostId} opened no tunnel: ${(err as Error).message}`, { cause: err });
      },
    );
    // Waited for by connects with their own timeouts; a failure nobody waits for any more is only logged.
    tunnel.ready.catch(() => undefined);
    this.#tunnels.set(hostId, tunnel);
    return tunnel;
  }

  /** A tunnel left without streams closes after the idle time, unless a connect comes first. */
  #maybeIdle(hostId: string, tunnel: Tunnel): void {
    const mux = tunnel.mux;
    if (!mux || mux.closed || mux.streams > 0 || tunnel.idle) return;
    tunnel.idle = setTimeout(() => {
      tunnel.idle = null;
      if (mux.streams > 0) return;
      this.#deps.logger.info({ hostId }, "the host's tunnel was idle: closed");
      mux.close();
    }, this.#limits.idleMs);
    tunnel.idle.unref();
  }
}

/** `ready`, or a {@link DialTimeout} after `ms` (the dial-back goes on for the connects after). */
function withTimeout(ready: Promise<TunnelMux>, hostId: string, ms: number): Promise<TunnelMux> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new DialTimeout(`host ${hostId}'s agent opened no tunnel within ${ms} ms (is its agent connected?)`)),
      ms,
    );
    timer.unref();
  });
  return Promise.race([ready, timeout]).finally(() => clearTimeout(timer));
}
