/**
 * Connections from the proxy to pods' ports: one keep-alive pool per pod port, its connections
 * opened through the runtime (`Runtime.connect`: a process's host port, a container's address), so
 * small requests reuse a connection rather than dial one each. A pod that stops has its pools
 * destroyed: requests under way to it end at once (their clients see the answer cut short).
 */
import { Agent, type AgentOptions, type ClientRequestArgs } from 'node:http';
import type { Duplex } from 'node:stream';

export type Dial = (podId: string, port: number) => Promise<Duplex>;

const dialFailures = new WeakSet<Error>();
/** Whether a request's `err` is its connection that could not be made: nothing of the request reached the pod. */
export const isDialFailure = (err: unknown): boolean => err instanceof Error && dialFailures.has(err);

/** At most this many idle connections are kept per pod port. */
const MAX_IDLE_PER_PORT = 32;
const IDLE_KEPT_MS = 60_000;

class PortAgent extends Agent {
  constructor(
    private readonly dial: Dial,
    private readonly podId: string,
    private readonly port: number,
    options: AgentOptions,
  ) {
    super(options);
  }

  // Node's Agent takes the socket from the callback when this answers nothing.
  override createConnection(
    _options: ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    this.dial(this.podId, this.port).then(
      (socket) => callback?.(null, socket),
      (err: unknown) => {
        const failure = err instanceof Error ? err : new Error(String(err));
        dialFailures.add(failure);
        callback?.(failure, undefined as unknown as Duplex);
      },
    );
    return undefined;
  }
}

export class Upstreams {
  /** pod id → port → its pool */
  readonly #pools = new Map<string, Map<number, Agent>>();

  constructor(private readonly dial: Dial) {}

  /** The pool of the pod's port. */
  agent(podId: string, port: number): Agent {
    let ports = this.#pools.get(podId);
    if (!ports) this.#pools.set(podId, (ports = new Map<number, Agent>()));
    let agent = ports.get(port);
    if (!agent) {
      agent = new PortAgent(this.dial, podId, port, {
        keepAlive: true,
        maxFreeSockets: MAX_IDLE_PER_PORT,
        // an idle kept connection is closed after this long
        timeout: IDLE_KEPT_MS,
      });
      ports.set(port, agent);
    }
    return agent;
  }

  /** Destroys the pod's pools: every connection to it, idle or in use. */
  drop(podId: string): void {
    const ports = this.#pools.get(podId);
    if (!ports) return;
    this.#pools.delete(podId);
    for (const agent of ports.values()) agent.destroy();
  }

  /** Pods with a pool now. */
  get size(): number {
    return this.#pools.size;
  }

  close(): void {
    for (const podId of [...this.#pools.keys()]) this.drop(podId);
  }
}
