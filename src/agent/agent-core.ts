/**
 * The agent: joins (or uses the stored credential), attaches to the host's runtime, then runs
 * three loops against the control plane (docs/fleet.md):
 *
 * - operations: a long poll for the host's operations, each applied in order per instance
 *   (operation-applier.ts) and acknowledged in a report; after a reconnect it asks from the start
 *   (`after=0`), the applied-operations file making a redelivery an acknowledgement only;
 * - reports: the full instance list at every (re)connect, then the changes the runtime tells
 *   and acknowledgements (at once, at most one report per `batchMs`), capacity when it changed,
 *   and a bare heartbeat when nothing else was sent for `heartbeatMs`;
 * - capacity: re-discovered every `capacityIntervalMs`, reported when it differs.
 *
 * A call that cannot reach its server backs off and moves to the next URL (server-rotation.ts);
 * the control plane refusing the credential ends the agent (exit 3). Transport-free: it speaks
 * through an {@link AgentTransport}, waits through {@link Timers}.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { HostCapacity } from '../fleet/protocol.js';
import type { InstanceOwner, Runtime } from '../runtime/runtime.js';
import { AgentFatal, JOIN_TOKEN_INVALID_MESSAGE } from './agent-fatal.js';
import { ControlPlaneRefusal, ControlPlaneUnreachable, type AgentTransport } from './agent-transport.js';
import type { AppliedOperations } from './applied-operations.js';
import type { AgentIdentity, CredentialFile } from './credential-file.js';
import { OperationApplier } from './operation-applier.js';
import { StreamDialer } from './stream-dialer.js';
import { AgentTunnels } from './agent-tunnels.js';
import { checkControlPlaneVersion } from './version-check.js';
import { ReportLoop } from './report-loop.js';
import { ServerRotation, type Backoff } from './server-rotation.js';
import type { Timers } from './timers.js';

export interface AgentCoreConfig {
  /** The control plane's URLs, tried in turn. */
  servers: string[];
  /** A one-time join token, used only when no credential is stored. */
  token: string | null;
  name: string;
  publicIp: string;
  portRange: [number, number];
  agentVersion: string;
  /** At most one report per this long: changes and acknowledgements within it go together in the next. @default 20 */
  batchMs?: number;
  /** How often the host's capacity is discovered again. @default 300000 */
  capacityIntervalMs?: number;
  backoff?: Backoff;
  /** At stop, how long operations being applied are waited for, so their acknowledgements go out. @default 10000 */
  stopWaitMs?: number;
}

export interface AgentCoreDeps {
  transport: AgentTransport;
  credentials: Pick<CredentialFile, 'load' | 'save' | 'path'>;
  applied: AppliedOperations;
  /** The runtime over the host's engine, built once the host's identity is known. */
  createRuntime(identity: AgentIdentity): Runtime;
  /** What the host offers, discovered at start. */
  capacity: HostCapacity;
  /** Discovers it again. */
  discoverCapacity(): Promise<HostCapacity>;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** [0, 1), for the backoff's jitter. @default Math.random */
  random?: () => number;
  config: AgentCoreConfig;
}

/** Bounds the control plane's timings, whatever it answers. */
const clampMs = (v: number, min: number, max: number, fallback: number): number =>
  Number.isFinite(v) && v > 0 ? Math.min(max, Math.max(min, v)) : fallback;

export class AgentCore {
  readonly #deps: AgentCoreDeps;
  readonly #rotation: ServerRotation;
  readonly #stopping = new AbortController();
  readonly #owners = new Map<string, InstanceOwner>();
  /** instances stopped and kept (operation-applier.ts keeps it; attach() fills it after a restart) */
  readonly #kept = new Set<string>();
  #identity: AgentIdentity | null = null;
  #applier: OperationApplier | null = null;
  #reports: ReportLoop | null = null;
  #end: ((fatal: AgentFatal | null) => void) | null = null;
  #ended: Promise<AgentFatal | null>;
  #running: Promise<void> | null = null;
  #capacity: HostCapacity;
  /** the poll asks for the operations after this seq (0 after a (re)connect) */
  #after = 0;

  constructor(deps: AgentCoreDeps) {
    this.#deps = deps;
    this.#capacity = deps.capacity;
    this.#rotation = new ServerRotation({
      servers: deps.config.servers,
      clock: deps.clock,
      timers: deps.timers,
      ...(deps.random ? { random: deps.random } : {}),
      ...(deps.config.backoff ? { backoff: deps.config.backoff } : {}),
    });
    this.#ended = new Promise((resolve) => {
      this.#end = resolve;
    });
  }

  /** The host's id, once joined or loaded. */
  get hostId(): string | null {
    return this.#identity?.hostId ?? null;
  }

  /** The control-plane URL in use. */
  get server(): string {
    return this.#rotation.server;
  }

  /**
   * Runs until {@link stop} (resolves) or until the agent cannot go on (rejects with
   * {@link AgentFatal}). Either way the runtime is closed: containers keep running.
   */
  run(): Promise<void> {
    this.#running ??= this.#run();
    return this.#running;
  }

  /** Stops polling, sends a last report, closes the runtime; resolves when done. */
  async stop(): Promise<void> {
    this.#end?.(null);
    this.#stopping.abort();
    await this.#running?.catch(() => undefined);
  }

  /**
   * The job API's URLs the control plane named, let through the runtime's container firewall;
   * until it names one (an older control plane never does), its own URLs, where it serves the job
   * API too unless it gives it a listener of its own.
   */
  async #allowJobUrls(runtime: Runtime, jobUrls: readonly string[]): Promise<void> {
    try {
      await runtime.allowJobUrls?.(jobUrls.length > 0 ? jobUrls : this.#deps.config.servers);
    } catch (err) {
      this.#deps.logger.error({ err }, 'cannot let containers reach the job API through the firewall');
    }
  }

  async #run(): Promise<void> {
    const { logger } = this.#deps;
    const stored = await this.#deps.credentials.load();
    const identity = stored ?? (await this.#join());
    if (!identity) return;
    if (stored && this.#deps.config.token)
      logger.info({ hostId: stored.hostId }, 'a host credential is stored: the join token is not used');
    this.#identity = identity;
    const runtime = this.#deps.createRuntime(identity);
    const reports = new ReportLoop({
      transport: this.#deps.transport,
      rotation: this.#rotation,
      credential: identity.credential,
      runtime,
      owners: this.#owners,
      kept: this.#kept,
      clock: this.#deps.clock,
      timers: this.#deps.timers,
      logger,
      failed: (err, epoch, server) => this.#failed(err, epoch, server, 'report'),
      jobUrl: (url) => void this.#allowJobUrls(runtime, [url]),
      signal: this.#stopping.signal,
      config: { heartbeatMs: identity.heartbeatMs, batchMs: this.#deps.config.batchMs ?? 20 },
    });
    this.#reports = reports;
    // The control plane's record may predate a restart that changed the host: tell it once.
    if (stored) reports.capacity(this.#capacity);
    const unsubscribe = runtime.onChange((status) => reports.changed(status));
    const tunnels = new AgentTunnels({ runtime, logger: logger.child({ component: 'tunnels' }) });
    const streams = new StreamDialer({
      runtime,
      tunnels,
      servers: () => [this.#rotation.server, ...this.#deps.config.servers.filter((s) => s !== this.#rotation.server)],
      credential: identity.credential,
      logger: logger.child({ component: 'streams' }),
    });
    this.#applier = new OperationApplier({
      streams,
      runtime,
      hostId: identity.hostId,
      applied: this.#deps.applied,
      owners: this.#owners,
      kept: this.#kept,
      logger: logger.child({ component: 'operations' }),
      operated: (id) => reports.operated(id),
      acknowledge: (ack) => reports.acknowledge(ack),
    });
    let fatal: AgentFatal | null;
    try {
      let attached;
      // Workers call back the control plane's job API (named by its first report's answer).
      await this.#allowJobUrls(runtime, []);
      try {
        attached = await runtime.attach();
      } catch (err) {
        throw new AgentFatal(`cannot attach to the Docker Engine: ${(err as Error).message}`, 1);
      }
      for (const gap of runtime.isolationGaps?.() ?? []) {
        if (gap.kind === 'firewall')
          throw new AgentFatal(
            `refusing to run: ${gap.detail}. Run the agent with CAP_NET_ADMIN (docs/fleet.md), give it a --firewall-command that may change the firewall, or pass --firewall off to accept that containers reach this host's services`,
            1,
          );
        logger.error({ gap: gap.detail }, 'accounts are not kept apart on this host');
      }
      for (const a of attached) {
        if (!a.owner) continue;
        this.#owners.set(a.id, a.owner);
        // Stopped and kept before the restart: still the host's, reported so in every full report.
        if (a.status === null) this.#kept.add(a.id);
      }
      const running = attached.filter((a) => a.status !== null).length;
      logger.info(
        { hostId: identity.hostId, server: this.#rotation.server, adopted: running, kept: attached.length - running },
        'agent attached to its engine; reporting',
      );
      const loops = this.#stopping.signal.aborted ? [] : [this.#pollLoop(), reports.run(), this.#capacityLoop()];
      fatal = await this.#ended;
      this.#stopping.abort();
      await Promise.allSettled(loops);
      if (!fatal) await this.#finish();
    } finally {
      unsubscribe();
      streams.close();
      tunnels.close();
      await runtime.close();
    }
    if (fatal) throw fatal;
    logger.info({ hostId: identity.hostId }, 'agent stopped; its containers keep running');
  }

  // ---- join

  async #join(): Promise<AgentIdentity | null> {
    const { config, transport, logger, capacity, clock } = this.#deps;
    if (!config.token)
      throw new AgentFatal(
        `no host credential in ${this.#deps.credentials.path} and no join token: create one with gantry hosts token create, and pass it with --token`,
        2,
      );
    const body = {
      token: config.token,
      name: config.name,
      publicIp: config.publicIp,
      portRange: config.portRange,
      agentVersion: config.agentVersion,
      capacity,
    };
    let attempts = 0;
    for (;;) {
      await this.#rotation.ready(this.#stopping.signal);
      if (this.#stopping.signal.aborted) return null;
      const { epoch, server } = this.#rotation;
      attempts += 1;
      try {
        const answer = await transport.join(server, body);
        this.#rotation.succeeded(epoch);
        checkControlPlaneVersion(config.agentVersion, answer, server, logger);
        const { controlPlaneVersion: _version, ...joined } = answer;
        const identity: AgentIdentity = {
          ...joined,
          heartbeatMs: clampMs(answer.heartbeatMs, 1_000, 300_000, 10_000),
          pollWaitMs: clampMs(answer.pollWaitMs, 0, 30_000, 25_000),
          joinedAt: clock.now(),
        };
        await this.#deps.credentials.save(identity);
        logger.info(
          { hostId: identity.hostId, dataCenterId: identity.dataCenterId, cloud: identity.cloud, server },
          'joined the control plane; the host credential is stored',
        );
        return identity;
      } catch (err) {
        if (err instanceof ControlPlaneRefusal) {
          if (err.status === 401)
            throw new AgentFatal(
              attempts > 1
                ? `${JOIN_TOKEN_INVALID_MESSAGE} (an earlier attempt got no answer: it may have joined; if gantry hosts list shows this host, revoke it)`
                : JOIN_TOKEN_INVALID_MESSAGE,
              2,
            );
          throw new AgentFatal(
            `the control plane refused to join this host: ${err.detail}${err.code ? ` (${err.code})` : ''}`,
            2,
          );
        }
        if (!(err instanceof ControlPlaneUnreachable)) throw err;
        const delay = this.#rotation.failed(epoch, { move: true });
        logger.warn(
          { server, reason: err.message, retryInMs: delay, next: this.#rotation.server },
          'cannot reach the control plane to join',
        );
      }
    }
  }

  // ---- operations

  async #pollLoop(): Promise<void> {
    const signal = this.#stopping.signal;
    const { transport } = this.#deps;
    const identity = this.#identity!;
    while (!signal.aborted) {
      await this.#rotation.ready(signal);
      if (signal.aborted) return;
      const { epoch, server } = this.#rotation;
      try {
        const operations = await transport.operations(
          server,
          identity.credential,
          { after: this.#after, waitMs: identity.pollWaitMs },
          signal,
        );
        this.#rotation.succeeded(epoch);
        for (const op of operations) {
          this.#after = Math.max(this.#after, op.seq);
          this.#applier!.dispatch(op);
        }
      } catch (err) {
        if (signal.aborted) return;
        this.#failed(err, epoch, server, 'poll');
      }
    }
  }

  // ---- capacity

  async #capacityLoop(): Promise<void> {
    const signal = this.#stopping.signal;
    const intervalMs = this.#deps.config.capacityIntervalMs ?? 300_000;
    while (!signal.aborted) {
      await this.#deps.timers.sleep(intervalMs, signal);
      if (signal.aborted) return;
      try {
        const capacity = await this.#deps.discoverCapacity();
        if (isDeepStrictEqual(capacity, this.#capacity)) continue;
        this.#deps.logger.info({ capacity }, "the host's capacity changed; reporting it");
        this.#capacity = capacity;
        this.#reports!.capacity(capacity);
      } catch (err) {
        this.#deps.logger.warn(
          { reason: (err as Error).message },
          "cannot discover the host's capacity again; the last one stands",
        );
      }
    }
  }

  // ---- failures and the end

  /**
   * A call failed. Refused credentials end the agent; anything else backs off (moving to the next
   * server when this one did not answer), and the next report is full and the next poll from 0.
   */
  #failed(err: unknown, epoch: number, server: string, call: 'poll' | 'report'): void {
    const { logger } = this.#deps;
    this.#after = 0;
    if (err instanceof ControlPlaneRefusal && err.status === 401) {
      const hostId = this.#identity!.hostId;
      const fix = `its containers keep running; to join again, remove ${this.#deps.credentials.path} and run gantry agent with a new token (gantry hosts token create)`;
      this.#end?.(
        new AgentFatal(
          err.code === 'HOST_REVOKED'
            ? `this host (${hostId}) was revoked on the control plane: ${fix}`
            : `the control plane does not accept this host's credential (${hostId}; ${err.code ?? 'no code'}: ${err.detail}): ${fix}`,
          3,
        ),
      );
      this.#stopping.abort();
      return;
    }
    const unreachable = err instanceof ControlPlaneUnreachable;
    const delay = this.#rotation.failed(epoch, { move: unreachable });
    // The full report goes out as soon as the backoff allows, not at the next heartbeat.
    this.#reports!.reconnecting();
    if (delay === 0) return;
    const fields = {
      server,
      call,
      reason: (err as Error).message,
      retryInMs: delay,
      next: this.#rotation.server,
      failures: this.#rotation.failures,
    };
    if (unreachable) logger.warn(fields, 'cannot reach the control plane');
    else logger.error(fields, 'the control plane refused a call; retrying');
  }

  /** At stop: operations under way finish (for a while), then one last report goes out. */
  async #finish(): Promise<void> {
    const { timers, config } = this.#deps;
    const waited = new AbortController();
    await Promise.race([this.#applier!.idle(), timers.sleep(config.stopWaitMs ?? 10_000, waited.signal)]);
    waited.abort();
    await this.#reports!.report({ last: true });
  }
}
