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
 * - States come from the engine's events (engine-events.ts, container-events.ts), and from a health
 *   probe on the published port (the spec's `health`, else the images map's; container-instance.ts).
 *   `inspect()` and `list()` answer from memory (live-instances.ts), which the events keep current.
 * - A container that ends on its own makes its instance `exited`, or `failed` when it ended before
 *   its health check passed or the kernel killed it for its memory limit (exit-reason.ts words why).
 * - Where the storage driver cannot cap a container's disk, the sampler watches its writable layer
 *   and one that grows past its `diskGb` fails (`failed`, with why) and is stopped.
 * - When the engine becomes unreachable, live instances turn `unknown` (with the reason) until it
 *   answers again; containers that died meanwhile (an engine restart) are started again.
 *
 * The facade the Runtime port sees: launching and adopting is in container-launch.ts, supervision in
 * container-instance.ts, the engine's events and outages in container-events.ts, suspend/resume
 * (the engine's pause/unpause) in container-pause.ts.
 */
import type { Duplex } from 'node:stream';
import type { ImageSpec } from '../../domain/image-spec.js';
import { RegistryGuard } from '../registry-guard.js';
import type {
  AttachedInstance,
  ImagePreparation,
  InstanceListener,
  IsolationGap,
  InstanceSpec,
  InstanceStatus,
  OutputLine,
  OutputQuery,
  PreparedImage,
  Runtime,
  ShellRequest,
  ShellSession,
  StopOptions,
} from '../runtime.js';
import { containerOutput } from './docker-output.js';
import { openDockerShell } from './docker-shell.js';
import { ContainerPreparer, type DiskLimitSupport } from './container-preparer.js';
import { diskExceeded, graceSeconds } from './container-instance.js';
import { adoptContainers, launchContainer, RUNNING_CONTAINER, type Launcher } from './container-launch.js';
import { onContainerEvent, onEngineOutage, reconcileContainers, type EngineWatch } from './container-events.js';
import { DockerClient } from './docker-client.js';
import { DEFAULT_LOG_MAX_BYTES, type DockerRuntimeOptions } from './docker-runtime-options.js';
import {
  LABEL,
  checkNamespace,
  containerNameOf,
  namespaceFilter,
  networkVolumeNameOf,
  podVolumeNameOf,
} from './docker-names.js';
import { DockerEngineError, isNotFound, isUnreachable } from './engine-connection.js';
import { SharedOutput } from '../shared-output.js';
import { EngineEvents } from './engine-events.js';
import { EngineHostPaths } from './engine-host-paths.js';
import { StartSlots } from './start-slots.js';
import { LIVE_STATES, LiveInstances, copyStatus } from './live-instances.js';
import { ContainerSampler } from './container-sampler.js';
import { AccountSeparation } from './account-separation.js';
import type { InstanceNetworks } from './instance-networks.js';
import { CONTAINER_NOFILE_LIMIT } from './container-config.js';
import { ContainerDialer } from './container-dial.js';
import { resumeContainer, suspendContainer } from './container-pause.js';

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
  /** What launching, adopting and supervising containers and following the engine use of this runtime. */
  readonly #instances: Launcher & EngineWatch;
  /** Followers of a container's log share one Engine API follow of it. */
  readonly #output = new SharedOutput((id, query) =>
    containerOutput(this.#client, containerNameOf(this.#namespace, id), query),
  );
  /** This host's paths, hidden from what tenants read of the engine's words (engine-host-paths.ts). */
  readonly #hostPaths: EngineHostPaths;
  readonly #dialer: ContainerDialer;
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
    this.#hostPaths = new EngineHostPaths(this.#client);
    this.#dialer = ContainerDialer.forEngine(options.dockerHost, (cid) =>
      this.#call(this.#client.inspectContainer(cid)),
    );
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
      onDiskExceeded: (live, used, limit) => void diskExceeded(this.#instances, live, used, limit),
    });
    this.#events = new EngineEvents({
      client: this.#client,
      namespace: this.#namespace,
      clock: options.clock,
      logger: options.logger,
      onConnected: (outage) => reconcileContainers(this.#instances, outage),
      onEvent: (event) => onContainerEvent(this.#instances, event),
      onOutage: (outage) => onEngineOutage(this.#instances, outage),
      ...(options.reconnect ? { backoff: options.reconnect } : {}),
    });
    this.#instances = {
      client: this.#client,
      live: this.#live,
      options,
      events: this.#events,
      namespace: this.#namespace,
      images: this.#images,
      preparer: this.#preparer,
      networks: this.#networks,
      separation: this.#separation,
      hide: (text) => this.#hostPaths.hide(text),
      call: (promise) => this.#call(promise),
      learnDataRoot: () => this.#hostPaths.learnDataRoot(),
      closed: () => this.#closed,
    };
  }

  /** Whether container disk sizes (`diskGb`) are enforced on this engine (for the host record). */
  get diskLimit(): DiskLimitSupport {
    return this.#preparer.diskLimit;
  }

  unavailable(): string | null {
    const reason = this.#events.outage?.reason;
    return reason === undefined ? null : this.#hostPaths.hide(reason);
  }

  async attach(): Promise<AttachedInstance[]> {
    await this.#hostPaths.learnDataRoot();
    const containers = await this.#call(
      this.#client.listContainers({ all: true, filters: namespaceFilter(this.#namespace) }),
    );
    await this.#call(this.#separation.attach(containers));
    const found = await adoptContainers(this.#instances, containers);
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
      const hidden = this.#hostPaths.hide(message);
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
      return launchContainer(this.#instances, spec);
    });
    this.#launching.set(spec.id, launch);
    try {
      return await launch;
    } finally {
      this.#launching.delete(spec.id);
    }
  }

  /** `discard`: once stopped (gracefully), the container is removed too (its container disk and log); the pod volume stays. */
  async stop(id: string, options: StopOptions = {}): Promise<void> {
    if (options.discard) {
      await this.stop(id);
      return this.#removeContainer(id, { keepVolume: true });
    }
    await this.#launching.get(id)?.catch(() => undefined);
    const live = this.#live.get(id);
    if (!live) return;
    live.stopping ??= (async () => {
      live.probing?.abort();
      try {
        await this.#call(this.#client.stopContainer(live.containerId, graceSeconds(this.#o)));
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
    return this.#removeContainer(id, { keepVolume: false });
  }

  async #removeContainer(id: string, { keepVolume }: { keepVolume: boolean }): Promise<void> {
    await this.#launching.get(id)?.catch(() => undefined);
    const live = this.#live.get(id);
    live?.probing?.abort();
    const removing = (async () => {
      const name = containerNameOf(this.#namespace, id);
      const networks = this.#networks
        ? Object.keys((await this.#call(this.#client.inspectContainer(name)))?.NetworkSettings?.Networks ?? {})
        : [];
      await this.#call(this.#client.removeContainer(name, { force: true, volumes: true }));
      if (!keepVolume) await this.#call(this.#client.removeVolume(podVolumeNameOf(this.#namespace, id)));
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
    this.#o.logger.info(
      { instance: id },
      keepVolume ? 'instance container removed (volume kept)' : 'instance container and volume removed',
    );
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

  isolationGaps = (): IsolationGap[] => this.#separation.gaps();
  allowJobUrls = (urls: readonly string[]): Promise<void> => this.#separation.allowJobUrls(urls);

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

  suspend = (id: string): Promise<void> => suspendContainer(this.#instances, id);
  resume = (id: string): Promise<void> => resumeContainer(this.#instances, id);
  // Pre-pulled images (prepared-images.ts); the engine is this runtime's one host.
  prepareImage = (_host: string, r: ImagePreparation) => this.#call(this.#preparer.images.prepare(r));
  preparedImages = (_host: string): Promise<PreparedImage[]> => this.#call(this.#preparer.images.list());
  discardImage = (_host: string, image: string) => this.#call(this.#preparer.images.discard(image));

  /** A TTY exec in the instance's container (docker-shell.ts). */
  async shell(id: string, request: ShellRequest): Promise<ShellSession> {
    const { containerId } = this.#live.running(id, 'pod');
    return openDockerShell({ dockerHost: this.#o.dockerHost, containerId }, request);
  }

  /** A connection to a port inside a running container (container-dial.ts). */
  async connect(id: string, port: number, options: Parameters<ContainerDialer['dial']>[2]): Promise<Duplex> {
    return this.#dialer.dial(this.#live.running(id, 'instance'), port, options);
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

  // ---- helpers

  /** Awaits an engine call; an unreachable engine is reported to the events follower too. */
  async #call<T>(promise: Promise<T>): Promise<T> {
    try {
      return await promise;
    } catch (err) {
      if (isUnreachable(err)) this.#events.reportUnreachable(err);
      throw err;
    }
  }
}
