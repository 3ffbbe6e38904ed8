/**
 * A typed Engine API client: the calls the Docker runtime makes, over engine-connection.ts (the
 * transport; see there for why not dockerode). Every call has a timeout; an engine error rejects
 * with the engine's message after what was being done (`pulling image "x": pull access denied …`);
 * an engine nobody answers for rejects with `DockerUnreachableError` (`the Docker Engine at
 * unix:///… is unreachable: …`).
 *
 * This class is the one object its callers hold; the calls themselves are written per kind of
 * engine object: engine-images.ts, engine-containers.ts, engine-volumes.ts, engine-networks.ts.
 */
import type { Readable } from 'node:stream';
import type { EngineCalls, Filters } from './engine-calls.js';
import * as containers from './engine-containers.js';
import { DEFAULT_ENGINE_TIMEOUT_MS, EngineConnection, type EngineConnectionOptions } from './engine-connection.js';
import * as images from './engine-images.js';
import type { RegistryCredential } from './engine-images.js';
import * as networks from './engine-networks.js';
import { ndjson } from './engine-streams.js';
import type {
  ContainerCreateBody,
  ContainerInspect,
  ContainerStats,
  ContainerSummary,
  DistributionInspect,
  EndpointSettings,
  EngineEvent,
  EngineInfo,
  ImageInspect,
  ImageSummary,
  Labels,
  NetworkInspect,
  VolumeInspect,
} from './engine-types.js';
import * as volumes from './engine-volumes.js';

export class DockerClient {
  readonly #conn: EngineConnection;
  readonly #calls: EngineCalls;

  constructor(options: EngineConnectionOptions) {
    this.#conn = new EngineConnection(options);
    this.#calls = { conn: this.#conn, timeoutMs: options.timeoutMs ?? DEFAULT_ENGINE_TIMEOUT_MS };
  }

  /** `unix:///…` or `tcp://…`, as given. */
  get address(): string {
    return this.#conn.address;
  }

  async ping(timeoutMs?: number): Promise<void> {
    await this.#conn
      .stream({ method: 'GET', path: '/_ping', doing: 'pinging the engine', ...(timeoutMs ? { timeoutMs } : {}) })
      .then((res) => res.resume());
  }

  async info(): Promise<EngineInfo> {
    return (await this.#conn.json<EngineInfo>({ method: 'GET', path: '/info', doing: 'reading the engine info' })).body;
  }

  // ---- images (engine-images.ts)

  inspectImage(ref: string): Promise<ImageInspect | null> {
    return images.inspectImage(this.#calls, ref);
  }

  /** Pulls `ref`, reading the progress stream to its end; `onProgress` hears each message (never the credential). */
  pullImage(ref: string, options?: images.PullOptions): Promise<void> {
    return images.pullImage(this.#calls, ref, options);
  }

  /** The digest of the manifest `ref` names, from the registry (through the engine), with no download. */
  inspectDistribution(ref: string, auth: RegistryCredential | null): Promise<DistributionInspect> {
    return images.inspectDistribution(this.#calls, ref, auth);
  }

  /** Imports a root filesystem tar as image `repo:tag`; `changes` are Dockerfile instructions (`CMD ["sh"]`). */
  importImage(tar: Readable, target: images.ImportTarget): Promise<void> {
    return images.importImage(this.#calls, tar, target);
  }

  /** Every image the engine holds, with the tags and digests it is known by. */
  listImages(): Promise<ImageSummary[]> {
    return images.listImages(this.#calls);
  }

  removeImage(ref: string): Promise<boolean> {
    return images.removeImage(this.#calls, ref);
  }

  // ---- containers (engine-containers.ts)

  createContainer(name: string, body: ContainerCreateBody): Promise<containers.CreatedContainer> {
    return containers.createContainer(this.#calls, name, body);
  }

  /** Starts it; a container already running is left as it is. */
  startContainer(id: string): Promise<void> {
    return containers.startContainer(this.#calls, id);
  }

  /** SIGTERM, then SIGKILL after `graceSeconds`; a container already stopped is left as it is. */
  stopContainer(id: string, graceSeconds: number): Promise<void> {
    return containers.stopContainer(this.#calls, id, graceSeconds);
  }

  /** Freezes its processes (memory and network kept); one already paused is left as it is. */
  pauseContainer(id: string): Promise<void> {
    return containers.pauseContainer(this.#calls, id);
  }

  /** Thaws a paused container; one not paused is left as it is. */
  unpauseContainer(id: string): Promise<void> {
    return containers.unpauseContainer(this.#calls, id);
  }

  /** @default signal 'SIGKILL' */
  killContainer(id: string, signal?: string): Promise<void> {
    return containers.killContainer(this.#calls, id, signal);
  }

  /** Answers false when there was no such container. */
  removeContainer(id: string, options?: containers.RemoveContainerOptions): Promise<boolean> {
    return containers.removeContainer(this.#calls, id, options);
  }

  /** `size`: also the size of its writable layer (`SizeRw`), which the engine computes by walking it. */
  inspectContainer(id: string, options?: { size?: boolean }): Promise<ContainerInspect | null> {
    return containers.inspectContainer(this.#calls, id, options);
  }

  /** One reading of a running container's CPU and memory, without the engine's one-second wait; null when it is gone. */
  containerStats(id: string): Promise<ContainerStats | null> {
    return containers.containerStats(this.#calls, id);
  }

  listContainers(options?: containers.ListContainersOptions): Promise<ContainerSummary[]> {
    return containers.listContainers(this.#calls, options);
  }

  /** Waits until it is no longer running (or `condition`); no timeout unless given. */
  waitContainer(id: string, options?: containers.WaitOptions): Promise<{ StatusCode: number }> {
    return containers.waitContainer(this.#calls, id, options);
  }

  /** Its stdout and stderr interleaved as written; `since` in ms epoch, `tail` in lines. */
  containerLogs(id: string, options?: containers.LogsOptions): Promise<string> {
    return containers.containerLogs(this.#calls, id, options);
  }

  /**
   * Its stdout and stderr as a stream (framed unless the container has a TTY), each line prefixed
   * with its RFC3339Nano time; with `follow`, open until the container stops or `signal` aborts.
   */
  containerLogStream(
    id: string,
    options: containers.LogsOptions & { follow: boolean },
    signal: AbortSignal,
  ): Promise<Readable> {
    return containers.containerLogStream(this.#calls, id, options, signal);
  }

  // ---- volumes (engine-volumes.ts)

  /** Creates it, or answers the existing one of that name (its labels are not changed then). */
  createVolume(name: string, labels: Labels): Promise<VolumeInspect> {
    return volumes.createVolume(this.#calls, name, labels);
  }

  inspectVolume(name: string): Promise<VolumeInspect | null> {
    return volumes.inspectVolume(this.#calls, name);
  }

  /** Answers false when there was no such volume; a volume in use rejects (409). */
  removeVolume(name: string): Promise<boolean> {
    return volumes.removeVolume(this.#calls, name);
  }

  listVolumes(filters: Filters): Promise<VolumeInspect[]> {
    return volumes.listVolumes(this.#calls, filters);
  }

  // ---- networks (engine-networks.ts)

  /** A bridge network; `subnet`: exactly that IPv4 range, `bridge`: under that interface name. */
  createNetwork(name: string, labels: Labels, options?: networks.NetworkOptions): Promise<{ Id: string }> {
    return networks.createNetwork(this.#calls, name, labels, options);
  }

  inspectNetwork(name: string): Promise<NetworkInspect | null> {
    return networks.inspectNetwork(this.#calls, name);
  }

  connectNetwork(network: string, containerId: string, endpoint?: EndpointSettings): Promise<void> {
    return networks.connectNetwork(this.#calls, network, containerId, endpoint);
  }

  /** Takes a (running) container off a network; `force` even when the engine would refuse. */
  disconnectNetwork(network: string, containerId: string, force?: boolean): Promise<void> {
    return networks.disconnectNetwork(this.#calls, network, containerId, force);
  }

  removeNetwork(name: string): Promise<boolean> {
    return networks.removeNetwork(this.#calls, name);
  }

  listNetworks(filters: Filters): Promise<NetworkInspect[]> {
    return networks.listNetworks(this.#calls, filters);
  }

  // ---- events

  /**
   * Subscribes to the engine's events and resolves once the engine has accepted the subscription
   * (events from then on are delivered); iterate the answer to read them. It ends when the engine
   * closes it and throws when the connection breaks; `signal` ends it.
   */
  async events(
    options: { filters?: Filters; sinceMs?: number },
    signal?: AbortSignal,
  ): Promise<AsyncIterable<EngineEvent>> {
    const query = {
      filters: options.filters ? JSON.stringify(options.filters) : undefined,
      since: options.sinceMs !== undefined ? (options.sinceMs / 1000).toFixed(3) : undefined,
    };
    const res = await this.#conn.stream(
      { method: 'GET', path: '/events', query, doing: 'following the engine events' },
      signal,
    );
    return ndjson<EngineEvent>(res);
  }

  /** Closes idle sockets; a client is not used after. */
  close(): void {
    this.#conn.close();
  }
}
