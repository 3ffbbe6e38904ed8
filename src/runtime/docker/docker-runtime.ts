/**
 * The Docker runtime: an instance is a container on a Docker Engine, created through its API
 * (docker-client.ts), named `gantry-<namespace>-<id>` and labelled with its owner, so a restarted
 * server adopts what still runs (`attach()`), and `close()` leaves containers running.
 *
 * - `start()` reuses a kept (stopped) container of the same id when it was created from the same
 *   spec (its `gantry.spec` label): a fast restart with its writable layer; otherwise it pulls the
 *   image when missing and creates the container anew (container-preparer.ts, container-config.ts).
 *   A pull from a registry the policy refuses (`registries`: loopback, private, …) is never asked
 *   of the engine: the start rejects, saying why. Nor is an image of a repository pulled here
 *   with a registry credential created for an account the registry does not let pull it
 *   (image-access.ts).
 * - States come from the engine's events (engine-events.ts), and from a health probe on the
 *   published port when the spec carries one (`health`) or else the config's images map gives the
 *   image one. `inspect()` and `list()`
 *   answer from memory (live-instances.ts), which the events keep current.
 * - A container that ends on its own makes its instance `exited`, or `failed` when it ended before
 *   its health check passed or the kernel killed it for its memory limit (exit-reason.ts words why).
 * - Where the storage driver cannot cap a container's disk, the sampler watches its writable layer
 *   and one that grows past its `diskGb` fails (`failed`, with why) and is stopped.
 * - When the engine becomes unreachable, live instances turn `unknown` (with the reason) until it
 *   answers again; containers that died meanwhile (an engine restart) are started again.
 */
import type { HealthProbe, ImageSpec } from '../../domain/image-spec.js';
import { describeTarget, waitUntilHealthy } from '../health-probe.js';
import { RegistryGuard } from '../registry-guard.js';
import type {
  AttachedInstance,
  InstanceListener,
  IsolationGap,
  InstanceSpec,
  InstanceState,
  InstanceStatus,
  OutputLine,
  OutputQuery,
  Runtime,
  ShellRequest,
  ShellSession,
} from '../runtime.js';
import { containerOutput } from './docker-output.js';
import { openDockerShell } from './docker-shell.js';
import { ContainerPreparer, goneNetwork, type DiskLimitSupport, type Prepared } from './container-preparer.js';
import { DockerClient } from './docker-client.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import {
  LABEL,
  checkNamespace,
  containerNameOf,
  namespaceFilter,
  networkVolumeNameOf,
  ownerOf,
  podVolumeNameOf,
} from './docker-names.js';
import { DockerEngineError, isNotFound, isUnreachable } from './engine-connection.js';
import { hideHostPaths } from '../host-paths.js';
import { SharedOutput } from '../shared-output.js';
import { EngineEvents, type Outage } from './engine-events.js';
import { tailLines } from './engine-streams.js';
import type { EngineEvent } from './engine-types.js';
import { exitReason, withOutput } from './exit-reason.js';
import { StartSlots } from './start-slots.js';
import { LiveInstances, copyStatus, newLive, type Live } from './live-instances.js';
import { ContainerSampler } from './container-sampler.js';
import { AccountSeparation } from './account-separation.js';
import type { InstanceNetworks } from './instance-networks.js';
import { CONTAINER_NOFILE_LIMIT } from './container-config.js';

export type { DiskLimitSupport } from './container-preparer.js';

/** How far before a (re)start a kept container's log is read from, for a clock that steps. */
const LOG_CLOCK_SLACK_MS = 50;
/** A container's json-file log is rotated past this size (two files kept). @default 10 MiB */
const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
const LIVE_STATES: ReadonlySet<InstanceState> = new Set(['starting', 'running', 'unknown']);
const RUNNING_CONTAINER = new Set(['running', 'paused', 'restarting']);
/** Containers inspected at once while attaching. */
const ATTACH_INSPECTIONS = 16;

export class DockerRuntime implements Runtime {
  readonly name = 'docker';
  readonly #o: DockerRuntimeOptions;
  readonly #namespace: string;
  readonly #client: DockerClient;
  readonly #events: EngineEvents;
  readonly #preparer: ContainerPreparer;
  /** A Map, not the config's object: image names are tenant input (`constructor`, `__proto__`). */
  readonly #images: ReadonlyMap<string, ImageSpec>;
  readonly #live: LiveInstances;
  readonly #launching = new Map<string, Promise<unknown>>();
  readonly #startSlots: StartSlots;
  /** Utilisation, read on an interval and kept on the statuses (container-sampler.ts). */
  readonly #stats: ContainerSampler;
  /** Account networks, the container firewall, an earlier version's containers (account-separation.ts). */
  readonly #separation: AccountSeparation;
  /** The account networks; null only when a test takes that defence away. */
  readonly #networks: InstanceNetworks | null;
  /** Followers of a container's log share one Engine API follow of it. */
  readonly #output = new SharedOutput((id, query) =>
    containerOutput(this.#client, containerNameOf(this.#namespace, id), query),
  );
  /**
   * This host's folders hidden from what tenants read besides the engines' defaults (host-paths.ts):
   * the engine's data root once known. The engine's address (its socket) is the operator's
   * setting and stays in the reasons that say it is unreachable.
   */
  readonly #hostRoots: string[] = [];
  #dataRoot: Promise<void> | null = null;
  #closed = false;

  constructor(options: DockerRuntimeOptions) {
    this.#o = options;
    this.#namespace = checkNamespace(options.namespace);
    this.#images = new Map(Object.entries(options.images));
    this.#live = new LiveInstances(options.logger);
    this.#startSlots = new StartSlots(options.maxConcurrentStarts ?? 4);
    this.#client = new DockerClient({
      dockerHost: options.dockerHost,
      ...(options.engineTimeoutMs ? { timeoutMs: options.engineTimeoutMs } : {}),
    });
    this.#separation = new AccountSeparation({
      client: this.#client,
      namespace: this.#namespace,
      logger: options.logger,
      ...(options.networks ? { networks: options.networks } : {}),
      ...(options.firewall ? { firewall: options.firewall } : {}),
      ...(options.isolation ? { isolation: options.isolation } : {}),
      ...(options.timers ? { timers: options.timers } : {}),
    });
    this.#networks = this.#separation.networks;
    this.#preparer = new ContainerPreparer({
      client: this.#client,
      namespace: this.#namespace,
      host: options.host,
      bindIp: options.bindIp,
      logger: options.logger,
      logMaxBytes: options.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES,
      registryGuard: new RegistryGuard(options.registries ? { policy: options.registries } : {}),
      networks: this.#networks,
      hardening: options.isolation?.hardening !== false,
      openFilesLimit: options.openFilesLimit ?? CONTAINER_NOFILE_LIMIT,
    });
    const { statsIntervalMs: intervalMs, timers, nvidiaSmi, nvidiaSmiEnv: env } = options;
    this.#stats = new ContainerSampler({
      client: this.#client,
      live: this.#live,
      host: options.host,
      logger: options.logger,
      intervalMs,
      timers,
      nvidiaSmi,
      env,
      onDiskExceeded: (live, used, limit) => void this.#diskExceeded(live, used, limit),
    });
    this.#events = new EngineEvents({
      client: this.#client,
      namespace: this.#namespace,
      clock: options.clock,
      logger: options.logger,
      onConnected: (outage) => this.#reconcile(outage),
      onEvent: (event) => this.#onEvent(event),
      onOutage: (outage) => this.#onOutage(outage),
      ...(options.reconnect ? { backoff: options.reconnect } : {}),
    });
  }

  /** Whether container disk sizes (`diskGb`) are enforced on this engine (for the host record). */
  get diskLimit(): DiskLimitSupport {
    return this.#preparer.diskLimit;
  }

  unavailable(): string | null {
    const reason = this.#events.outage?.reason;
    return reason === undefined ? null : this.#hide(reason);
  }

  async attach(): Promise<AttachedInstance[]> {
    await this.#learnDataRoot();
    const containers = await this.#call(
      this.#client.listContainers({ all: true, filters: namespaceFilter(this.#namespace) }),
    );
    await this.#call(this.#separation.attach(containers));
    // A running container is adopted from the listing: its labels carry the memory limit, and it
    // started when it was created (a start always creates a fresh container). One from an older
    // Gantry without the label is inspected, a few at a time.
    const inspections = new StartSlots(ATTACH_INSPECTIONS);
    const inspected = new Map(
      await Promise.all(
        containers
          .filter(
            (c) => c.Labels?.[LABEL.instance] && RUNNING_CONTAINER.has(c.State) && c.Labels[LABEL.memory] === undefined,
          )
          .map(
            async (c) => [c.Id, await inspections.run(() => this.#call(this.#client.inspectContainer(c.Id)))] as const,
          ),
      ),
    );
    const found: AttachedInstance[] = [];
    for (const c of containers) {
      const id = c.Labels?.[LABEL.instance];
      if (!id) continue;
      const owner = ownerOf(c.Labels);
      const held = this.#live.get(id);
      if (held?.containerId === c.Id) {
        found.push({ id, owner, status: copyStatus(held.status) });
        continue;
      }
      const memory = Number(c.Labels?.[LABEL.memory]);
      const seen =
        RUNNING_CONTAINER.has(c.State) && Number.isFinite(memory)
          ? { Id: c.Id, startedMs: c.Created * 1000, memoryBytes: memory }
          : null;
      const info = inspected.get(c.Id);
      const running =
        seen ??
        (info?.State.Running
          ? { Id: info.Id, startedMs: parseEngineTime(info.State.StartedAt), memoryBytes: info.HostConfig.Memory ?? 0 }
          : null);
      if (!running) {
        found.push({ id, owner, status: null });
        continue;
      }
      const live = this.#adopt(id, running, null, 'running');
      found.push({ id, owner, status: copyStatus(live.status) });
    }
    this.#events.start();
    this.#stats.wake();
    return found;
  }

  /** Starts it; a refusal's message carries no path of this host (host-paths.ts), the operator's log has it whole. */
  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    try {
      return await this.#start(spec);
    } catch (err) {
      const message = (err as Error).message;
      const hidden = this.#hide(message);
      if (hidden === message) throw err;
      this.#o.logger.warn({ instance: spec.id, err: message }, 'instance could not start');
      throw new Error(hidden, { cause: err });
    }
  }

  async #start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.#closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    if (this.#launching.has(spec.id)) throw new Error(`instance "${spec.id}" is already being started`);
    // Known down: say so now rather than after a connect attempt (over tcp, that can take the whole timeout).
    const outage = this.#events.outage;
    if (outage) throw new Error(outage.reason);
    const existing = this.#live.get(spec.id);
    if (existing) {
      const { state } = existing.status;
      if (!existing.stopping && LIVE_STATES.has(state))
        throw new Error(`instance "${spec.id}" is already ${state}; stop it before starting it again`);
      // A finished instance that was never stopped, or one being stopped: clear it out first.
      await this.stop(spec.id);
      if (this.#live.has(spec.id) || this.#launching.has(spec.id))
        throw new Error(`instance "${spec.id}" is already being started`);
    }
    const launch = this.#startSlots.run(async () => {
      // Closed while it waited for its turn: nothing was sent to the engine yet.
      if (this.#closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
      return this.#launch(spec);
    });
    this.#launching.set(spec.id, launch);
    try {
      return await launch;
    } finally {
      this.#launching.delete(spec.id);
    }
  }

  async stop(id: string): Promise<void> {
    await this.#launching.get(id)?.catch(() => undefined);
    const live = this.#live.get(id);
    if (!live) return;
    live.stopping ??= (async () => {
      live.probing?.abort();
      try {
        await this.#call(this.#client.stopContainer(live.containerId, this.#graceSeconds()));
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    })().then(
      () => {
        this.#live.forget(live);
        this.#o.logger.info({ instance: id }, 'instance container stopped (kept)');
      },
      (err: unknown) => {
        live.stopping = null;
        throw err;
      },
    );
    return live.stopping;
  }

  async remove(id: string): Promise<void> {
    await this.#launching.get(id)?.catch(() => undefined);
    const live = this.#live.get(id);
    live?.probing?.abort();
    const removing = (async () => {
      const name = containerNameOf(this.#namespace, id);
      const networks = this.#networks
        ? Object.keys((await this.#call(this.#client.inspectContainer(name)))?.NetworkSettings?.Networks ?? {})
        : [];
      await this.#call(this.#client.removeContainer(name, { force: true, volumes: true }));
      await this.#call(this.#client.removeVolume(podVolumeNameOf(this.#namespace, id)));
      // Its account's (or cluster's) network goes once nothing else refers to it.
      await this.#call(this.#networks?.release(networks) ?? Promise.resolve());
    })();
    if (live) live.stopping = removing;
    try {
      await removing;
    } catch (err) {
      if (live) live.stopping = null;
      throw err;
    }
    if (live) this.#live.forget(live);
    this.#o.logger.info({ instance: id }, 'instance container and volume removed');
  }

  /**
   * Deletes a network volume. The engine refuses while any container mounts it, even a stopped
   * one: kept containers of stopped instances are only a cache for a fast restart, so they are
   * removed (their next start makes a new container); a running one makes this refuse, naming it.
   */
  async removeVolume(volume: { kind: 'network'; volumeId: string }): Promise<void> {
    const name = networkVolumeNameOf(this.#namespace, volume.volumeId);
    const users = await this.#call(this.#client.listContainers({ all: true, filters: { volume: [name] } }));
    const running = users.filter((c) => RUNNING_CONTAINER.has(c.State));
    if (running.length > 0) {
      const names = running.map(
        (c) => c.Labels?.[LABEL.instance] ?? c.Names[0]?.replace(/^\//, '') ?? c.Id.slice(0, 12),
      );
      throw new Error(
        `network volume "${volume.volumeId}" is still mounted by running instances (${names.join(', ')}); stop them first`,
      );
    }
    for (const kept of users) await this.#call(this.#client.removeContainer(kept.Id, { force: false }));
    try {
      await this.#call(this.#client.removeVolume(name));
    } catch (err) {
      if (err instanceof DockerEngineError && err.statusCode === 409)
        throw new Error(
          `network volume "${volume.volumeId}" is still mounted by a container (stop the instances using it first): ${err.engineMessage}`,
          { cause: err },
        );
      throw err;
    }
  }

  isolationGaps(): IsolationGap[] {
    return this.#separation.gaps();
  }

  allowJobUrls(urls: readonly string[]): Promise<void> {
    return this.#separation.allowJobUrls(urls);
  }

  /** The container's log, from the engine (docker-output.ts); one follow of it however many read it (shared-output.ts). */
  output(id: string, query: OutputQuery): AsyncIterable<OutputLine> {
    return this.#output.read(id, query);
  }

  async inspect(id: string): Promise<InstanceStatus | null> {
    const live = this.#live.get(id);
    return live?.launched ? copyStatus(live.status) : null;
  }

  async list(): Promise<InstanceStatus[]> {
    return this.#live.statuses();
  }

  onChange(listener: InstanceListener): () => void {
    return this.#live.onChange(listener);
  }

  /** A TTY exec in the instance's container (docker-shell.ts). */
  async shell(id: string, request: ShellRequest): Promise<ShellSession> {
    const live = this.#live.get(id);
    if (!live?.launched || live.stopping || live.status.state !== 'running')
      throw new Error(`pod "${id}" is not running here`);
    return openDockerShell({ dockerHost: this.#o.dockerHost, containerId: live.containerId }, request);
  }

  /**
   * Detaches: stops following the engine and closes the connection; containers keep running for a
   * later `attach()`. A closed runtime holds nothing (what it knew would go stale unwatched):
   * `inspect()` answers null and `list()` nothing.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#launching.values()]);
    for (const live of this.#live.all()) live.probing?.abort();
    this.#live.clear();
    this.#output.close();
    this.#separation.close();
    await this.#stats.close();
    this.#events.close();
    this.#client.close();
  }

  // ---- start

  async #launch(spec: InstanceSpec, again = false): Promise<InstanceStatus> {
    this.#events.start();
    await this.#learnDataRoot();
    // The start's own probe first: an agent's runtime gets it from the control plane's images map.
    const health = spec.health ?? this.#images.get(spec.image)?.health;
    const probe = health ? probeOf(health, spec) : null;
    const prepared: Prepared = await this.#call(this.#preparer.prepare(spec));
    if (prepared.kind === 'running') {
      const { info } = prepared;
      const live = this.#adopt(
        spec.id,
        { Id: info.Id, startedMs: parseEngineTime(info.State.StartedAt), memoryBytes: info.HostConfig.Memory ?? 0 },
        probe,
        probe ? 'starting' : 'running',
      );
      this.#live.emit(live);
      if (probe) this.#probe(live);
      return copyStatus(live.status);
    }
    const { containerId, plan } = prepared;
    const live = newLive(spec.id, containerId, plan.body.HostConfig.Memory ?? 0, probe);
    live.logsSinceMs = null;
    // Known before the engine starts it, so an exit the events report at once is not missed.
    this.#live.add(live);
    try {
      await this.#call(this.#client.startContainer(containerId));
    } catch (err) {
      this.#live.forget(live);
      // A container that cannot start (a port taken, a missing command) is not kept to fail again.
      await this.#client.removeContainer(containerId, { force: true, volumes: true }).catch(() => false);
      // Its network was removed behind Gantry's back after it was created: made again, once.
      const gone = goneNetwork(err);
      if (gone && this.#networks && !again) {
        this.#networks.forget(gone);
        return this.#launch(spec, true);
      }
      // An engine whose own open-files limit is lower cannot raise a container's: again with the
      // engine's (the plan then asks none, so this happens once).
      if (plan.body.HostConfig.Ulimits && err instanceof DockerEngineError && /rlimit/i.test(err.engineMessage)) {
        this.#preparer.openFilesRefused(err.engineMessage);
        return this.#launch(spec, again);
      }
      throw err;
    }
    live.launched = true;
    live.status = {
      id: spec.id,
      state: probe ? 'starting' : 'running',
      startedAt: this.#o.clock.now(),
      exitCode: null,
      reason: null,
      stats: null,
    };
    this.#o.logger.info(
      { instance: spec.id, image: spec.image, container: containerId.slice(0, 12) },
      'instance container started',
    );
    // Closed meanwhile: left running (close detaches; a later attach adopts it).
    if (this.#closed) return copyStatus(live.status);
    this.#live.emit(live);
    if (probe) this.#probe(live);
    if (live.exitSeen) void this.#observeExit(live);
    return copyStatus(live.status);
  }

  /** Takes a running container as the live instance `id`, as it is. */
  #adopt(id: string, container: RunningContainer, probe: Live['probe'], state: 'starting' | 'running'): Live {
    const live = newLive(id, container.Id, container.memoryBytes, probe);
    const started = container.startedMs;
    live.launched = true;
    // Its current run's output begins about when the engine says it started.
    live.logsSinceMs = started === null ? null : started - 1_000;
    live.status = { id, state, startedAt: started ?? this.#o.clock.now(), exitCode: null, reason: null, stats: null };
    this.#live.add(live);
    return live;
  }

  #probe(live: Live): void {
    const { target, health } = live.probe!;
    const abort = new AbortController();
    live.probing = abort;
    void waitUntilHealthy(target, {
      intervalMs: Math.max(10, health.intervalMs),
      timeoutMs: health.timeoutMs,
      signal: abort.signal,
    }).then(async (result) => {
      if (!this.#live.current(live) || live.stopping) return;
      if (result.ok) {
        if (live.status.state === 'starting') {
          live.status = { ...live.status, state: 'running' };
          this.#live.emit(live);
        } else if (live.status.state === 'unknown' && live.beforeOutage === 'starting') live.beforeOutage = 'running';
        return;
      }
      if (result.aborted || live.status.state !== 'starting') return;
      const tail = await this.#tail(live);
      if (!this.#live.current(live) || live.stopping || stateOf(live) !== 'starting') return;
      const reason = withOutput(
        `health check ${describeTarget(target)} did not pass within ${health.timeoutMs} ms (last attempt: ${result.lastError})`,
        tail,
      );
      live.status = { ...live.status, state: 'failed', reason, stats: null };
      this.#live.emit(live);
      // A failed instance must not keep running (and holding its port) until someone stops it.
      await this.#client.stopContainer(live.containerId, this.#graceSeconds()).catch((err: unknown) => {
        this.#o.logger.warn({ err, instance: live.id }, 'cannot stop the container that failed its health check');
      });
    });
  }

  /**
   * Its container wrote more to its writable layer than its disk, which the storage driver cannot
   * cap: the instance fails, saying so, and its container is stopped (kept, as any stop keeps it).
   */
  async #diskExceeded(live: Live, usedBytes: number, limitBytes: number): Promise<void> {
    if (!this.#live.current(live) || live.stopping || live.status.state === 'failed') return;
    live.probing?.abort();
    const reason = `its container disk grew to ${formatGb(usedBytes)} GB, past its ${formatGb(limitBytes)} GB (containerDiskInGb): the engine's storage driver cannot cap it, so Gantry stopped the instance`;
    this.#o.logger.warn({ instance: live.id, usedBytes, limitBytes }, 'stopping an instance past its container disk');
    live.status = { ...live.status, state: 'failed', reason, stats: null };
    this.#live.emit(live);
    await this.#client.stopContainer(live.containerId, this.#graceSeconds()).catch((err: unknown) => {
      this.#o.logger.warn({ err, instance: live.id }, 'cannot stop the container past its disk');
    });
  }

  // ---- what the engine tells

  #onEvent(event: EngineEvent): void {
    if (event.Type !== 'container' || (event.Action !== 'die' && event.Action !== 'destroy')) return;
    const id = event.Actor.Attributes?.[LABEL.instance];
    const live = id === undefined ? undefined : this.#live.get(id);
    if (!live || live.containerId !== event.Actor.ID || live.stopping) return;
    if (!live.launched) {
      live.exitSeen = true;
      return;
    }
    void this.#observeExit(live);
  }

  /** The container of a live instance stopped on its own: find out how, and say so. */
  async #observeExit(live: Live): Promise<void> {
    if (live.observing || live.stopping || !this.#live.current(live)) return;
    live.observing = true;
    try {
      const info = await this.#client.inspectContainer(live.containerId);
      if (live.stopping || !this.#live.current(live)) return;
      if (!info) {
        this.#ended(live, null, 'its container was removed outside Gantry');
        return;
      }
      if (info.State.Running) return;
      const { ExitCode: code, OOMKilled: oom } = info.State;
      if (live.status.state === 'failed') {
        // It failed its health check and the runtime stopped it.
        live.status = { ...live.status, exitCode: code };
        return;
      }
      const tail = code !== 0 || oom ? await this.#tail(live) : '';
      if (live.stopping || !this.#live.current(live) || stateOf(live) === 'failed') return;
      const starting =
        (live.status.state === 'unknown' ? live.beforeOutage : live.status.state) === 'starting' && live.probe !== null;
      // The engine's own words on why (a start that failed in the runtime) are the operator's; the tenant's are cleaned.
      const engineError = info.State.Error;
      if (engineError)
        this.#o.logger.info({ instance: live.id, err: engineError }, 'the engine says why the container ended');
      // Killed for its memory limit is a failure (the pod's ERROR), not an ending of its own.
      this.#ended(
        live,
        code,
        exitReason({ ...info.State, Error: engineError ? this.#hide(engineError) : engineError }, tail, {
          starting,
          memoryBytes: live.memoryBytes,
        }),
        starting || oom,
      );
    } catch (err) {
      if (isUnreachable(err)) this.#events.reportUnreachable(err);
      else this.#o.logger.warn({ err, instance: live.id }, 'cannot inspect the container that ended');
    } finally {
      live.observing = false;
    }
  }

  #ended(live: Live, exitCode: number | null, reason: string, failed = false): void {
    live.probing?.abort();
    live.beforeOutage = null;
    live.status = { ...live.status, state: failed ? 'failed' : 'exited', exitCode, reason, stats: null };
    this.#o.logger.info({ instance: live.id, exitCode }, 'instance container ended');
    this.#live.emit(live);
  }

  #onOutage(outage: Outage): void {
    for (const live of this.#live.all()) {
      if (!live.launched || live.stopping || (live.status.state !== 'starting' && live.status.state !== 'running'))
        continue;
      live.beforeOutage = live.status.state;
      live.status = { ...live.status, state: 'unknown', reason: this.#hide(outage.reason) };
      this.#live.emit(live);
    }
  }

  /**
   * After each (re)connect, before events are read: the listing is the truth about the gap.
   * Running containers get their state back; one that died while the engine was unreachable (an
   * engine restart stops every container) is started again, since nobody stopped its instance;
   * one that ended before that, or is gone, ends its instance.
   */
  async #reconcile(outage: Outage | null): Promise<void> {
    // An engine that restarted (or a host that rebooted under it) may have lost the rules.
    if (outage) await this.#separation.installFirewall();
    const containers = await this.#client.listContainers({ all: true, filters: namespaceFilter(this.#namespace) });
    const byId = new Map(containers.map((c) => [c.Id, c]));
    for (const live of this.#live.all()) {
      if (!live.launched || live.stopping || !LIVE_STATES.has(live.status.state)) continue;
      const c = byId.get(live.containerId);
      if (c && RUNNING_CONTAINER.has(c.State)) {
        this.#restore(live);
        continue;
      }
      if (!c) {
        this.#ended(live, null, 'its container was removed outside Gantry');
        continue;
      }
      const info = await this.#client.inspectContainer(live.containerId);
      const finished = parseEngineTime(info?.State.FinishedAt ?? '');
      if (outage && finished !== null && finished >= outage.sinceWallMs) await this.#restartAfterOutage(live);
      else {
        this.#restore(live);
        await this.#observeExit(live);
      }
    }
  }

  #restore(live: Live): void {
    if (live.status.state !== 'unknown') return;
    live.status = { ...live.status, state: live.beforeOutage ?? 'running', reason: null };
    live.beforeOutage = null;
    this.#live.emit(live);
  }

  async #restartAfterOutage(live: Live): Promise<void> {
    this.#o.logger.warn(
      { instance: live.id },
      'its container died while the Docker Engine was unreachable; starting it again',
    );
    try {
      live.logsSinceMs = Date.now() - LOG_CLOCK_SLACK_MS;
      await this.#client.startContainer(live.containerId);
    } catch (err) {
      if (isUnreachable(err)) throw err;
      this.#o.logger.warn({ instance: live.id, err: (err as Error).message }, 'cannot start its container again');
      this.#ended(
        live,
        null,
        `its container stopped while the Docker Engine was unreachable and could not be started again: ${this.#hide((err as Error).message)}`,
        true,
      );
      return;
    }
    live.beforeOutage = null;
    live.status = {
      ...live.status,
      state: live.probe ? 'starting' : 'running',
      startedAt: this.#o.clock.now(),
      exitCode: null,
      reason: null,
    };
    this.#live.emit(live);
    if (live.probe) this.#probe(live);
  }

  // ---- helpers

  /** What the engine said, without this host's paths (host-paths.ts): for tenants' eyes. */
  #hide(text: string): string {
    return hideHostPaths(text, this.#hostRoots);
  }

  /** The engine's data root joins the hidden folders, once (best effort: the defaults and ids still hold). */
  #learnDataRoot(): Promise<void> {
    this.#dataRoot ??= this.#client.info().then(
      (info) => {
        const root: unknown = info.DockerRootDir;
        if (typeof root === 'string') this.#hostRoots.push(root);
      },
      () => {
        this.#dataRoot = null;
      },
    );
    return this.#dataRoot;
  }

  /** Awaits an engine call; an unreachable engine is reported to the events follower too. */
  async #call<T>(promise: Promise<T>): Promise<T> {
    try {
      return await promise;
    } catch (err) {
      if (isUnreachable(err)) this.#events.reportUnreachable(err);
      throw err;
    }
  }

  async #tail(live: Live): Promise<string> {
    try {
      return tailLines(
        await this.#client.containerLogs(live.containerId, {
          tail: 50,
          ...(live.logsSinceMs !== null ? { sinceMs: live.logsSinceMs } : {}),
        }),
      );
    } catch {
      return '';
    }
  }

  #graceSeconds(): number {
    return Math.max(0, Math.ceil(this.#o.stopGraceMs / 1000));
  }
}

/** The health probe of an instance: its published port on 127.0.0.1 (on the host's network, the port itself). */
function probeOf(health: HealthProbe, spec: InstanceSpec): Live['probe'] {
  const binding = spec.ports.find((p) => p.private === health.port);
  if (!binding) {
    const ports = spec.ports.map((p) => `${p.private}/${p.protocol}`).join(', ') || 'none';
    throw new Error(
      `cannot start image "${spec.image}": its health check probes port ${health.port}, which this instance does not expose (ports: ${ports})`,
    );
  }
  const port = spec.networkMode === 'host' ? binding.private : binding.public;
  return { target: { type: health.type, host: '127.0.0.1', port, path: health.path || '/' }, health };
}

/** An engine timestamp (RFC 3339, nanoseconds) in ms; null for the zero time or nonsense. */
function parseEngineTime(text: string): number | null {
  const ms = Date.parse(text);
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}

/** Read through a function so TypeScript does not keep a narrowing across an await. */
/** What adopting a running container needs to know of it. */
interface RunningContainer {
  Id: string;
  /** null: unknown */
  startedMs: number | null;
  memoryBytes: number;
}

const stateOf = (live: Live): InstanceState => live.status.state;

/** Bytes as GB (GiB) with at most two decimals. */
const formatGb = (bytes: number): string => String(Number((bytes / 1024 ** 3).toFixed(2)));
