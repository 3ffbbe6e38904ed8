/**
 * The Docker runtime: an instance is a container on a Docker Engine, created through its API
 * (docker-client.ts), named `gantry-<namespace>-<id>` and labelled with its owner, so a restarted
 * server adopts what still runs (`attach()`), and `close()` leaves containers running.
 *
 * - `start()` reuses a kept (stopped) container of the same id when it was created from the same
 *   spec (its `gantry.spec` label): a fast restart with its writable layer; otherwise it pulls the
 *   image when missing and creates the container anew (container-config.ts).
 * - States come from the engine's events (engine-events.ts), and from a health probe on the
 *   published port when the config's images map gives the image one. `inspect()` and `list()`
 *   answer from memory, which the events keep current.
 * - When the engine becomes unreachable, live instances turn `unknown` (with the reason) until it
 *   answers again; containers that died meanwhile (an engine restart) are started again.
 */
import type { Logger } from 'pino';
import type { HealthProbe, ImageSpec } from '../../config.js';
import { describeTarget, waitUntilHealthy, type ProbeTarget } from '../process/health-probe.js';
import type { AttachedInstance, InstanceListener, InstanceSpec, InstanceState, InstanceStatus, Runtime } from '../runtime.js';
import { planContainer, type ContainerPlan } from './container-config.js';
import { DockerClient } from './docker-client.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import { LABEL, checkNamespace, containerNameOf, namespaceFilter, networkVolumeNameOf, ownerOf, podVolumeNameOf } from './docker-names.js';
import { DockerEngineError, isNotFound, isUnreachable } from './engine-connection.js';
import { EngineEvents, type Outage } from './engine-events.js';
import { ensureNetwork } from './engine-networks.js';
import { tailLines } from './engine-streams.js';
import type { ContainerInspect, EngineEvent, EngineInfo } from './engine-types.js';
import { exitReason, withOutput } from './exit-reason.js';

/** Whether `diskGb` is enforced on this engine, and why not when it is not. */
export interface DiskLimitSupport {
  /** null until the engine has been asked */
  enforced: boolean | null;
  /** in words, for the host record's notes */
  note: string | null;
}

interface EngineFacts {
  cpus: number;
  /** the json-file log cap, when the engine logs to json-file */
  logMaxBytes: number | null;
}

interface Live {
  id: string;
  containerId: string;
  status: InstanceStatus;
  /** false until the engine has started it: hidden from inspect/list; an exit seen meanwhile waits */
  launched: boolean;
  exitSeen: boolean;
  /** what was held before the engine became unreachable */
  beforeOutage: InstanceState | null;
  probe: { target: ProbeTarget; health: HealthProbe } | null;
  probing: AbortController | null;
  stopping: Promise<void> | null;
  observing: boolean;
  memoryBytes: number;
  /**
   * Wall-clock ms from which the container's log is this run's (a kept container's log holds its
   * earlier runs too); null: all of it. Not the engine's StartedAt: a quick process has written
   * (and exited) before the engine records that it started.
   */
  logsSinceMs: number | null;
}

/** How far before a (re)start a kept container's log is read from, for a clock that steps. */
const LOG_CLOCK_SLACK_MS = 50;
/** The json-file log of a container is rotated past this size (two files kept). @default 10 MiB */
const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
const LIVE_STATES: ReadonlySet<InstanceState> = new Set(['starting', 'running', 'unknown']);
const RUNNING_CONTAINER = new Set(['running', 'paused', 'restarting']);

export class DockerRuntime implements Runtime {
  readonly name = 'docker';
  readonly #o: DockerRuntimeOptions;
  readonly #namespace: string;
  readonly #client: DockerClient;
  readonly #events: EngineEvents;
  /** A Map, not the config's object: image names are tenant input (`constructor`, `__proto__`). */
  readonly #images: ReadonlyMap<string, ImageSpec>;
  readonly #instances = new Map<string, Live>();
  readonly #launching = new Map<string, Promise<unknown>>();
  readonly #listeners = new Set<InstanceListener>();
  #facts: Promise<EngineFacts> | null = null;
  #disk: DiskLimitSupport = { enforced: null, note: null };
  #closed = false;

  constructor(options: DockerRuntimeOptions) {
    this.#o = options;
    this.#namespace = checkNamespace(options.namespace);
    this.#images = new Map(Object.entries(options.images));
    this.#client = new DockerClient({ dockerHost: options.dockerHost, ...(options.engineTimeoutMs ? { timeoutMs: options.engineTimeoutMs } : {}) });
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
    return { ...this.#disk };
  }

  /** The engine's client (its address, and calls for the composition root and tests). */
  get client(): DockerClient {
    return this.#client;
  }

  unavailable(): string | null {
    return this.#events.outage?.reason ?? null;
  }

  async attach(): Promise<AttachedInstance[]> {
    const containers = await this.#call(this.#client.listContainers({ all: true, filters: namespaceFilter(this.#namespace) }));
    const found: AttachedInstance[] = [];
    for (const c of containers) {
      const id = c.Labels?.[LABEL.instance];
      if (!id) continue;
      const owner = ownerOf(c.Labels);
      const held = this.#instances.get(id);
      if (held?.containerId === c.Id) {
        found.push({ id, owner, status: copyStatus(held.status) });
        continue;
      }
      if (!RUNNING_CONTAINER.has(c.State)) {
        found.push({ id, owner, status: null });
        continue;
      }
      const info = await this.#call(this.#client.inspectContainer(c.Id));
      if (!info?.State.Running) {
        found.push({ id, owner, status: null });
        continue;
      }
      const live = this.#newLive(id, info.Id, info.HostConfig.Memory ?? 0, null);
      live.launched = true;
      live.logsSinceMs = sinceStart(info);
      live.status = { id, state: 'running', startedAt: parseEngineTime(info.State.StartedAt) ?? this.#o.clock.now(), exitCode: null, reason: null, stats: null };
      this.#instances.set(id, live);
      found.push({ id, owner, status: copyStatus(live.status) });
    }
    this.#events.start();
    return found;
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.#closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    if (this.#launching.has(spec.id)) throw new Error(`instance "${spec.id}" is already being started`);
    const existing = this.#instances.get(spec.id);
    if (existing) {
      const { state } = existing.status;
      if (!existing.stopping && LIVE_STATES.has(state)) throw new Error(`instance "${spec.id}" is already ${state}; stop it before starting it again`);
      // A finished instance that was never stopped, or one being stopped: clear it out first.
      await this.stop(spec.id);
      if (this.#instances.has(spec.id) || this.#launching.has(spec.id)) throw new Error(`instance "${spec.id}" is already being started`);
    }
    const launch = this.#launch(spec);
    this.#launching.set(spec.id, launch);
    try {
      return await launch;
    } finally {
      this.#launching.delete(spec.id);
    }
  }

  async stop(id: string): Promise<void> {
    await this.#launching.get(id)?.catch(() => undefined);
    const live = this.#instances.get(id);
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
        if (this.#instances.get(id) === live) this.#instances.delete(id);
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
    const live = this.#instances.get(id);
    live?.probing?.abort();
    const removing = (async () => {
      await this.#call(this.#client.removeContainer(containerNameOf(this.#namespace, id), { force: true, volumes: true }));
      await this.#call(this.#client.removeVolume(podVolumeNameOf(this.#namespace, id)));
    })();
    if (live) live.stopping = removing;
    try {
      await removing;
    } catch (err) {
      if (live) live.stopping = null;
      throw err;
    }
    if (live && this.#instances.get(id) === live) this.#instances.delete(id);
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
      const names = running.map((c) => c.Labels?.[LABEL.instance] ?? c.Names[0]?.replace(/^\//, '') ?? c.Id.slice(0, 12));
      throw new Error(`network volume "${volume.volumeId}" is still mounted by running instances (${names.join(', ')}); stop them first`);
    }
    for (const kept of users) await this.#call(this.#client.removeContainer(kept.Id, { force: false }));
    try {
      await this.#call(this.#client.removeVolume(name));
    } catch (err) {
      if (err instanceof DockerEngineError && err.statusCode === 409)
        throw new Error(`network volume "${volume.volumeId}" is still mounted by a container (stop the instances using it first): ${err.engineMessage}`);
      throw err;
    }
  }

  async inspect(id: string): Promise<InstanceStatus | null> {
    const live = this.#instances.get(id);
    return live?.launched ? copyStatus(live.status) : null;
  }

  async list(): Promise<InstanceStatus[]> {
    return [...this.#instances.values()].filter((l) => l.launched).map((l) => copyStatus(l.status));
  }

  onChange(listener: InstanceListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /**
   * Detaches: stops following the engine and closes the connection; containers keep running for a
   * later `attach()`. A closed runtime holds nothing (what it knew would go stale unwatched):
   * `inspect()` answers null and `list()` nothing.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#launching.values()]);
    for (const live of this.#instances.values()) live.probing?.abort();
    this.#instances.clear();
    this.#events.close();
    this.#client.close();
  }

  // ---- start

  async #launch(spec: InstanceSpec): Promise<InstanceStatus> {
    const { logger } = this.#o;
    this.#events.start();
    const image = this.#images.get(spec.image);
    const probe = image?.health ? this.#probeOf(image.health, spec) : null;
    const facts = await this.#call(this.#engineFacts());
    const network = spec.network && spec.networkMode !== 'host' ? await this.#call(ensureNetwork(this.#client, this.#namespace, spec.network)) : null;
    const plan = (diskLimit: boolean): ContainerPlan =>
      planContainer(spec, { namespace: this.#namespace, host: this.#o.host, bindIp: this.#o.bindIp, diskLimit, engineCpus: facts.cpus, logMaxBytes: facts.logMaxBytes, network });
    let planned = plan(this.#disk.enforced !== false);

    const kept = await this.#call(this.#client.inspectContainer(planned.name));
    if (kept && kept.Config.Labels?.[LABEL.spec] === planned.specHash) {
      if (kept.State.Running) return this.#adoptRunning(spec, kept, probe);
      logger.info({ instance: spec.id, container: kept.Id.slice(0, 12) }, 'starting the kept container again (same spec)');
      for (const volume of planned.volumes) await this.#call(this.#client.createVolume(volume.name, volume.labels));
      return this.#run(spec, kept.Id, planned, probe, false);
    }
    if (kept) {
      logger.info({ instance: spec.id, container: kept.Id.slice(0, 12) }, 'removing the kept container: the spec changed');
      await this.#call(this.#client.removeContainer(kept.Id, { force: true, volumes: true }));
    }

    await this.#ensureImage(spec);
    for (const volume of planned.volumes) await this.#call(this.#client.createVolume(volume.name, volume.labels));
    let created: { Id: string };
    try {
      created = await this.#call(this.#client.createContainer(planned.name, planned.body));
    } catch (err) {
      if (!(spec.diskGb > 0 && planned.body.HostConfig.StorageOpt && isStorageOptRefusal(err))) throw err;
      this.#refuseDiskLimit(err);
      planned = plan(false);
      created = await this.#call(this.#client.createContainer(planned.name, planned.body));
    }
    return this.#run(spec, created.Id, planned, probe, true);
  }

  /** Starts the created (or kept) container, registers it, and begins its probe. */
  async #run(spec: InstanceSpec, containerId: string, plan: ContainerPlan, probe: Live['probe'], fresh: boolean): Promise<InstanceStatus> {
    const live = this.#newLive(spec.id, containerId, plan.body.HostConfig.Memory ?? 0, probe);
    live.logsSinceMs = fresh ? null : Date.now() - LOG_CLOCK_SLACK_MS;
    this.#instances.set(spec.id, live);
    try {
      await this.#call(this.#client.startContainer(containerId));
    } catch (err) {
      if (this.#instances.get(spec.id) === live) this.#instances.delete(spec.id);
      // A container that cannot start (a port taken, a missing command) is not kept to fail again.
      if (fresh) await this.#client.removeContainer(containerId, { force: true, volumes: true }).catch(() => false);
      throw err;
    }
    live.launched = true;
    live.status = { id: spec.id, state: probe ? 'starting' : 'running', startedAt: this.#o.clock.now(), exitCode: null, reason: null, stats: null };
    this.#o.logger.info({ instance: spec.id, image: spec.image, container: containerId.slice(0, 12), reused: !fresh }, 'instance container started');
    if (this.#closed) {
      // Left running: close detaches, a later attach adopts it.
      return copyStatus(live.status);
    }
    this.#emit(live);
    if (probe) this.#probe(live);
    if (live.exitSeen) void this.#observeExit(live);
    return copyStatus(live.status);
  }

  /** The container already runs, created from this spec (a start retried after its answer was lost): take it as it is. */
  #adoptRunning(spec: InstanceSpec, info: ContainerInspect, probe: Live['probe']): InstanceStatus {
    const live = this.#newLive(spec.id, info.Id, info.HostConfig.Memory ?? 0, probe);
    live.launched = true;
    live.logsSinceMs = sinceStart(info);
    live.status = { id: spec.id, state: probe ? 'starting' : 'running', startedAt: parseEngineTime(info.State.StartedAt) ?? this.#o.clock.now(), exitCode: null, reason: null, stats: null };
    this.#instances.set(spec.id, live);
    this.#emit(live);
    if (probe) this.#probe(live);
    return copyStatus(live.status);
  }

  async #ensureImage(spec: InstanceSpec): Promise<void> {
    if (await this.#call(this.#client.inspectImage(spec.image))) return;
    const { logger } = this.#o;
    logger.info({ instance: spec.id, image: spec.image, withCredential: Boolean(spec.registryAuth) }, 'pulling image');
    await this.#call(
      this.#client.pullImage(spec.image, {
        auth: spec.registryAuth ?? null,
        onProgress: (m) => {
          if (!m.progress) logger.debug({ image: spec.image, status: m.status, layer: m.id }, 'pull progress');
        },
      }),
    );
    logger.info({ image: spec.image }, 'image pulled');
  }

  #probeOf(health: HealthProbe, spec: InstanceSpec): Live['probe'] {
    const binding = spec.ports.find((p) => p.private === health.port);
    if (!binding) {
      const ports = spec.ports.map((p) => `${p.private}/${p.protocol}`).join(', ') || 'none';
      throw new Error(`cannot start image "${spec.image}": its health check probes port ${health.port}, which this instance does not expose (ports: ${ports})`);
    }
    // On the host's network the container listens on the port itself.
    const port = spec.networkMode === 'host' ? binding.private : binding.public;
    return { target: { type: health.type, host: '127.0.0.1', port, path: health.path || '/' }, health };
  }

  #probe(live: Live): void {
    const { target, health } = live.probe!;
    const abort = new AbortController();
    live.probing = abort;
    void waitUntilHealthy(target, { intervalMs: Math.max(10, health.intervalMs), timeoutMs: health.timeoutMs, signal: abort.signal }).then(async (result) => {
      if (!this.#current(live) || live.stopping) return;
      if (result.ok) {
        if (live.status.state === 'starting') {
          live.status = { ...live.status, state: 'running' };
          this.#emit(live);
        } else if (live.status.state === 'unknown' && live.beforeOutage === 'starting') live.beforeOutage = 'running';
        return;
      }
      if (result.aborted || live.status.state !== 'starting') return;
      const tail = await this.#tail(live);
      if (!this.#current(live) || live.stopping || stateOf(live) !== 'starting') return;
      const reason = withOutput(`health check ${describeTarget(target)} did not pass within ${health.timeoutMs} ms (last attempt: ${result.lastError})`, tail);
      live.status = { ...live.status, state: 'failed', reason, stats: null };
      this.#emit(live);
      // A failed instance must not keep running (and holding its port) until someone stops it.
      await this.#client.stopContainer(live.containerId, this.#graceSeconds()).catch((err: unknown) => {
        this.#o.logger.warn({ err, instance: live.id }, 'cannot stop the container that failed its health check');
      });
    });
  }

  // ---- what the engine tells

  #onEvent(event: EngineEvent): void {
    if (event.Type !== 'container' || (event.Action !== 'die' && event.Action !== 'destroy')) return;
    const id = event.Actor.Attributes?.[LABEL.instance];
    const live = id === undefined ? undefined : this.#instances.get(id);
    if (!live || live.containerId !== event.Actor.ID || live.stopping) return;
    if (!live.launched) {
      live.exitSeen = true;
      return;
    }
    void this.#observeExit(live);
  }

  /** The container of a live instance stopped on its own: find out how, and say so. */
  async #observeExit(live: Live): Promise<void> {
    if (live.observing || live.stopping || !this.#current(live)) return;
    live.observing = true;
    try {
      const info = await this.#client.inspectContainer(live.containerId);
      if (live.stopping || !this.#current(live)) return;
      if (!info) {
        this.#ended(live, null, 'its container was removed outside Gantry');
        return;
      }
      if (info.State.Running) return;
      const { ExitCode: code, OOMKilled: oom } = info.State;
      if (live.status.state === 'failed') {
        // Failed its health check; the runtime stopped it.
        live.status = { ...live.status, exitCode: code };
        return;
      }
      const tail = code !== 0 || oom ? await this.#tail(live) : '';
      if (live.stopping || !this.#current(live) || stateOf(live) === 'failed') return;
      const starting = (live.status.state === 'unknown' ? live.beforeOutage : live.status.state) === 'starting' && live.probe !== null;
      this.#ended(live, code, exitReason(info.State, tail, { starting, memoryBytes: live.memoryBytes }), starting);
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
    this.#emit(live);
  }

  #onOutage(outage: Outage): void {
    for (const live of this.#instances.values()) {
      if (!live.launched || live.stopping || !LIVE_STATES.has(live.status.state) || live.status.state === 'unknown') continue;
      live.beforeOutage = live.status.state;
      live.status = { ...live.status, state: 'unknown', reason: outage.reason };
      this.#emit(live);
    }
  }

  /**
   * After each (re)connect, before events are read: the listing is the truth about the gap.
   * Running containers get their state back; one that died while the engine was unreachable (an
   * engine restart stops every container) is started again, since nobody stopped its instance;
   * one that ended before that, or is gone, ends its instance.
   */
  async #reconcile(outage: Outage | null): Promise<void> {
    const containers = await this.#client.listContainers({ all: true, filters: namespaceFilter(this.#namespace) });
    const byId = new Map(containers.map((c) => [c.Id, c]));
    for (const live of [...this.#instances.values()]) {
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
    this.#emit(live);
  }

  async #restartAfterOutage(live: Live): Promise<void> {
    this.#o.logger.warn({ instance: live.id }, 'its container died while the Docker Engine was unreachable; starting it again');
    try {
      live.logsSinceMs = Date.now() - LOG_CLOCK_SLACK_MS;
      await this.#client.startContainer(live.containerId);
    } catch (err) {
      if (isUnreachable(err)) throw err;
      this.#ended(live, null, `its container stopped while the Docker Engine was unreachable and could not be started again: ${(err as Error).message}`, true);
      return;
    }
    live.beforeOutage = null;
    live.status = { ...live.status, state: live.probe ? 'starting' : 'running', startedAt: this.#o.clock.now(), exitCode: null, reason: null };
    this.#emit(live);
    if (live.probe) this.#probe(live);
  }

  // ---- helpers

  #engineFacts(): Promise<EngineFacts> {
    this.#facts ??= this.#client.info().then(
      (info) => {
        this.#judgeDiskLimit(info);
        return { cpus: info.NCPU, logMaxBytes: info.LoggingDriver === 'json-file' ? (this.#o.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES) : null };
      },
      (err: unknown) => {
        this.#facts = null;
        throw err;
      },
    );
    return this.#facts;
  }

  /** overlay2 takes a size only over xfs mounted with pquota: on anything else, do not ask. */
  #judgeDiskLimit(info: EngineInfo): void {
    if (this.#disk.enforced !== null) return;
    const backing = info.DriverStatus?.find(([key]) => key === 'Backing Filesystem')?.[1];
    if (info.Driver === 'overlay2' && backing !== undefined && backing !== 'xfs') {
      this.#disk = { enforced: false, note: `container disk sizes are not enforced: the engine's storage driver overlay2 on ${backing} takes no size limit (it needs xfs mounted with pquota)` };
      this.#o.logger.warn({ driver: info.Driver, backing }, this.#disk.note!);
    }
  }

  #refuseDiskLimit(err: unknown): void {
    this.#disk = { enforced: false, note: `container disk sizes are not enforced: the engine refused a size limit (${(err as DockerEngineError).engineMessage})` };
    this.#o.logger.warn(this.#disk.note!);
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
      return tailLines(await this.#client.containerLogs(live.containerId, { tail: 50, ...(live.logsSinceMs !== null ? { sinceMs: live.logsSinceMs } : {}) }));
    } catch {
      return '';
    }
  }

  #graceSeconds(): number {
    return Math.max(0, Math.ceil(this.#o.stopGraceMs / 1000));
  }

  #newLive(id: string, containerId: string, memoryBytes: number, probe: Live['probe']): Live {
    return {
      id,
      containerId,
      status: { id, state: 'starting', startedAt: null, exitCode: null, reason: null, stats: null },
      launched: false,
      exitSeen: false,
      beforeOutage: null,
      probe,
      probing: null,
      stopping: null,
      observing: false,
      memoryBytes,
      logsSinceMs: null,
    };
  }

  #current(live: Live): boolean {
    return this.#instances.get(live.id) === live;
  }

  #emit(live: Live): void {
    for (const listener of [...this.#listeners]) {
      try {
        const result: unknown = listener(copyStatus(live.status));
        if (result instanceof Promise) result.catch((err: unknown) => this.#listenerFailed(err));
      } catch (err) {
        this.#listenerFailed(err);
      }
    }
  }

  #listenerFailed(err: unknown): void {
    this.#o.logger.error({ err }, 'an instance listener threw; the runtime carries on');
  }
}

const isStorageOptRefusal = (err: unknown): boolean => err instanceof DockerEngineError && /storage.?opt|storage option|quota/i.test(err.engineMessage);

/** An engine timestamp (RFC 3339, nanoseconds) in ms; null for the zero time or nonsense. */
export function parseEngineTime(text: string): number | null {
  const ms = Date.parse(text);
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}

/** Where an adopted container's current run begins in its log, give or take the engine's lag in recording it. */
const sinceStart = (info: ContainerInspect): number | null => {
  const started = parseEngineTime(info.State.StartedAt);
  return started === null ? null : started - 1_000;
};

const copyStatus = (status: InstanceStatus): InstanceStatus => ({ ...status, stats: status.stats && { ...status.stats } });

/** Read through a function so TypeScript does not keep a narrowing across an await. */
const stateOf = (live: Live): InstanceState => live.status.state;
