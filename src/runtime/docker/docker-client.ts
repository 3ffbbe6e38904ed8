/**
 * A typed Engine API client: the calls the Docker runtime makes, over engine-connection.ts (see
 * there for why not dockerode). Every call has a timeout; an engine error rejects with the engine's
 * message after what was being done (`pulling image "x": pull access denied …`); an engine nobody
 * answers for rejects with `DockerUnreachableError` (`the Docker Engine at unix:///… is unreachable: …`).
 */
import type { Readable } from 'node:stream';
import { registryOf, registryOfImage, splitImageRef } from '../../domain/image-ref.js';
import {
  DEFAULT_ENGINE_TIMEOUT_MS,
  DockerEngineError,
  EngineConnection,
  isNotFound,
  type EngineConnectionOptions,
} from './engine-connection.js';
import { decodeLogFrames, ndjson } from './engine-streams.js';
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
  ProgressMessage,
  VolumeInspect,
} from './engine-types.js';

export interface RegistryCredential {
  username: string;
  password: string;
}

/** `{ label: ['gantry.namespace=x'] }` and the like, as `GET …/json?filters=` takes them. */
export type Filters = Record<string, string[]>;

/** How long the engine may take to answer for a registry (`/distribution`). @default 60000 */
const REGISTRY_ANSWER_MS = 60_000;

/** A pull that shows no progress for this long is given up. @default 300000 */
const PULL_INACTIVITY_MS = 300_000;

const enc = encodeURIComponent;

export class DockerClient {
  readonly #conn: EngineConnection;
  readonly #timeoutMs: number;

  constructor(options: EngineConnectionOptions) {
    this.#conn = new EngineConnection(options);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_ENGINE_TIMEOUT_MS;
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

  // ---- images

  async inspectImage(ref: string): Promise<ImageInspect | null> {
    return orNull(
      this.#conn.json<ImageInspect>({
        method: 'GET',
        path: `/images/${enc(ref)}/json`,
        doing: `inspecting image "${ref}"`,
      }),
    );
  }

  /**
   * Pulls `ref` (with the registry credential when given), reading the progress stream to its end:
   * the engine reports most failures inside the stream, with a 200 status. `onProgress` hears each
   * message (never the credential).
   */
  async pullImage(
    ref: string,
    options: {
      auth?: RegistryCredential | null;
      onProgress?: (m: ProgressMessage) => void;
      inactivityMs?: number;
    } = {},
  ): Promise<void> {
    const { repo, tag } = splitImageRef(ref);
    const headers: Record<string, string> = {};
    if (options.auth) headers['x-registry-auth'] = registryAuthHeader(options.auth, registryOf(repo));
    const doing = `pulling image "${ref}"`;
    await this.#progress(
      { method: 'POST', path: '/images/create', query: { fromImage: repo, tag }, headers, doing },
      options.onProgress,
      options.inactivityMs ?? PULL_INACTIVITY_MS,
    );
  }

  /**
   * Asks the registry (through the engine, with the credential when given) for the manifest `ref`
   * names (`GET /distribution/{name}/json`): its digest, with no download and no local tag changed.
   * The engine answers from the registry, never from its own images: a registry that refuses the
   * credential, or cannot be reached, rejects.
   */
  async inspectDistribution(ref: string, auth: RegistryCredential | null): Promise<DistributionInspect> {
    const headers: Record<string, string> = {};
    if (auth) headers['x-registry-auth'] = registryAuthHeader(auth, registryOfImage(ref));
    return (
      await this.#conn.json<DistributionInspect>({
        method: 'GET',
        path: `/distribution/${enc(ref)}/json`,
        headers,
        // Past the engine's own registry timeouts (a 30 s dial): its reason, not ours, says why.
        timeoutMs: Math.max(this.#timeoutMs, REGISTRY_ANSWER_MS),
        doing: `asking the registry for image "${ref}"`,
      })
    ).body;
  }

  /** Imports a root filesystem tar as image `repo:tag`; `changes` are Dockerfile instructions (`CMD ["sh"]`). */
  async importImage(tar: Readable, target: { repo: string; tag: string; changes?: string[] }): Promise<void> {
    const query = new URLSearchParams({ fromSrc: '-', repo: target.repo, tag: target.tag });
    for (const change of target.changes ?? []) query.append('changes', change);
    await this.#progress(
      {
        method: 'POST',
        path: `/images/create?${query.toString()}`,
        bodyStream: tar,
        contentType: 'application/x-tar',
        doing: `importing image "${target.repo}:${target.tag}"`,
      },
      undefined,
      PULL_INACTIVITY_MS,
    );
  }

  /** Every image the engine holds, with the tags and digests it is known by. */
  async listImages(): Promise<ImageSummary[]> {
    return (await this.#conn.json<ImageSummary[]>({ method: 'GET', path: '/images/json', doing: 'listing images' }))
      .body;
  }

  async removeImage(ref: string): Promise<boolean> {
    return gone(this.#conn.json({ method: 'DELETE', path: `/images/${enc(ref)}`, doing: `removing image "${ref}"` }));
  }

  // ---- containers

  async createContainer(name: string, body: ContainerCreateBody): Promise<{ Id: string; Warnings: string[] | null }> {
    return (
      await this.#conn.json<{ Id: string; Warnings: string[] | null }>({
        method: 'POST',
        path: '/containers/create',
        query: { name },
        body,
        doing: `creating container "${name}"`,
      })
    ).body;
  }

  /** Starts it; a container already running is left as it is. */
  async startContainer(id: string): Promise<void> {
    await this.#conn.json({
      method: 'POST',
      path: `/containers/${enc(id)}/start`,
      doing: `starting container ${short(id)}`,
    });
  }

  /** SIGTERM, then SIGKILL after `graceSeconds`; a container already stopped is left as it is. */
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    await this.#conn.json({
      method: 'POST',
      path: `/containers/${enc(id)}/stop`,
      query: { t: graceSeconds },
      timeoutMs: graceSeconds * 1_000 + this.#timeoutMs,
      doing: `stopping container ${short(id)}`,
    });
  }

  async killContainer(id: string, signal = 'SIGKILL'): Promise<void> {
    await this.#conn.json({
      method: 'POST',
      path: `/containers/${enc(id)}/kill`,
      query: { signal },
      doing: `killing container ${short(id)}`,
    });
  }

  /** Answers false when there was no such container. */
  async removeContainer(id: string, options: { force?: boolean; volumes?: boolean } = {}): Promise<boolean> {
    return gone(
      this.#conn.json({
        method: 'DELETE',
        path: `/containers/${enc(id)}`,
        query: { force: options.force ?? false, v: options.volumes ?? false },
        doing: `removing container ${short(id)}`,
      }),
    );
  }

  /** `size`: also the size of its writable layer (`SizeRw`), which the engine computes by walking it. */
  async inspectContainer(id: string, options: { size?: boolean } = {}): Promise<ContainerInspect | null> {
    return orNull(
      this.#conn.json<ContainerInspect>({
        method: 'GET',
        path: `/containers/${enc(id)}/json`,
        ...(options.size ? { query: { size: true } } : {}),
        doing: `inspecting container ${short(id)}`,
      }),
    );
  }

  /** One reading of a running container's CPU and memory, without the engine's one-second wait; null when it is gone. */
  async containerStats(id: string): Promise<ContainerStats | null> {
    const query = { stream: false, 'one-shot': true };
    return orNull(
      this.#conn.json<ContainerStats>({
        method: 'GET',
        path: `/containers/${enc(id)}/stats`,
        query,
        doing: `reading the stats of container ${short(id)}`,
      }),
    );
  }

  async listContainers(options: { all?: boolean; filters?: Filters } = {}): Promise<ContainerSummary[]> {
    const query = { all: options.all ?? false, filters: options.filters ? JSON.stringify(options.filters) : undefined };
    return (
      await this.#conn.json<ContainerSummary[]>({
        method: 'GET',
        path: '/containers/json',
        query,
        doing: 'listing containers',
      })
    ).body;
  }

  /** Waits until it is no longer running (or `condition`); no timeout unless given. */
  async waitContainer(
    id: string,
    options: { condition?: 'not-running' | 'next-exit' | 'removed'; timeoutMs?: number } = {},
  ): Promise<{ StatusCode: number }> {
    return (
      await this.#conn.json<{ StatusCode: number }>({
        method: 'POST',
        path: `/containers/${enc(id)}/wait`,
        query: { condition: options.condition ?? 'not-running' },
        timeoutMs: options.timeoutMs ?? 2 ** 31 - 1,
        doing: `waiting for container ${short(id)}`,
      })
    ).body;
  }

  /** Its stdout and stderr interleaved as written; `since` in ms epoch, `tail` in lines. */
  async containerLogs(id: string, options: { tail?: number; sinceMs?: number } = {}): Promise<string> {
    const res = await this.#conn.stream({
      method: 'GET',
      path: `/containers/${enc(id)}/logs`,
      query: {
        stdout: true,
        stderr: true,
        tail: options.tail ?? 'all',
        since: options.sinceMs !== undefined ? (options.sinceMs / 1000).toFixed(3) : undefined,
      },
      doing: `reading the logs of container ${short(id)}`,
    });
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    return decodeLogFrames(Buffer.concat(chunks))
      .map((f) => f.data.toString('utf8'))
      .join('');
  }

  /**
   * Its stdout and stderr as a stream (framed unless the container has a TTY), each line prefixed
   * with its RFC3339Nano time; with `follow`, open until the container stops or `signal` aborts.
   */
  async containerLogStream(
    id: string,
    options: { follow: boolean; tail?: number; sinceMs?: number },
    signal: AbortSignal,
  ): Promise<Readable> {
    return this.#conn.stream(
      {
        method: 'GET',
        path: `/containers/${enc(id)}/logs`,
        query: {
          stdout: true,
          stderr: true,
          timestamps: true,
          follow: options.follow,
          tail: options.tail ?? 'all',
          since: options.sinceMs !== undefined ? (options.sinceMs / 1000).toFixed(3) : undefined,
        },
        doing: `reading the logs of container ${short(id)}`,
      },
      signal,
    );
  }

  // ---- volumes

  /** Creates it, or answers the existing one of that name (its labels are not changed then). */
  async createVolume(name: string, labels: Labels): Promise<VolumeInspect> {
    return (
      await this.#conn.json<VolumeInspect>({
        method: 'POST',
        path: '/volumes/create',
        body: { Name: name, Labels: labels },
        doing: `creating volume "${name}"`,
      })
    ).body;
  }

  async inspectVolume(name: string): Promise<VolumeInspect | null> {
    return orNull(
      this.#conn.json<VolumeInspect>({
        method: 'GET',
        path: `/volumes/${enc(name)}`,
        doing: `inspecting volume "${name}"`,
      }),
    );
  }

  /** Answers false when there was no such volume; a volume in use rejects (409). */
  async removeVolume(name: string): Promise<boolean> {
    return gone(
      this.#conn.json({ method: 'DELETE', path: `/volumes/${enc(name)}`, doing: `removing volume "${name}"` }),
    );
  }

  async listVolumes(filters: Filters): Promise<VolumeInspect[]> {
    const res = await this.#conn.json<{ Volumes: VolumeInspect[] | null }>({
      method: 'GET',
      path: '/volumes',
      query: { filters: JSON.stringify(filters) },
      doing: 'listing volumes',
    });
    return res.body.Volumes ?? [];
  }

  // ---- networks

  /**
   * A bridge network; with `subnet`, on exactly that IPv4 range (the engine picks one otherwise),
   * and with `bridge`, under that interface name.
   */
  async createNetwork(
    name: string,
    labels: Labels,
    options: { subnet?: string; bridge?: string } = {},
  ): Promise<{ Id: string }> {
    const body = {
      Name: name,
      Driver: 'bridge',
      CheckDuplicate: true,
      Labels: labels,
      ...(options.subnet ? { IPAM: { Driver: 'default', Config: [{ Subnet: options.subnet }] } } : {}),
      ...(options.bridge ? { Options: { 'com.docker.network.bridge.name': options.bridge } } : {}),
    };
    return (
      await this.#conn.json<{ Id: string }>({
        method: 'POST',
        path: '/networks/create',
        body,
        doing: `creating network "${name}"`,
      })
    ).body;
  }

  async inspectNetwork(name: string): Promise<NetworkInspect | null> {
    return orNull(
      this.#conn.json<NetworkInspect>({
        method: 'GET',
        path: `/networks/${enc(name)}`,
        doing: `inspecting network "${name}"`,
      }),
    );
  }

  async connectNetwork(network: string, containerId: string, endpoint: EndpointSettings = {}): Promise<void> {
    await this.#conn.json({
      method: 'POST',
      path: `/networks/${enc(network)}/connect`,
      body: { Container: containerId, EndpointConfig: endpoint },
      doing: `connecting container ${short(containerId)} to network "${network}"`,
    });
  }

  /** Takes a (running) container off a network; `force` even when the engine would refuse. */
  async disconnectNetwork(network: string, containerId: string, force = false): Promise<void> {
    await this.#conn.json({
      method: 'POST',
      path: `/networks/${enc(network)}/disconnect`,
      body: { Container: containerId, Force: force },
      doing: `disconnecting container ${short(containerId)} from network "${network}"`,
    });
  }

  async removeNetwork(name: string): Promise<boolean> {
    return gone(
      this.#conn.json({ method: 'DELETE', path: `/networks/${enc(name)}`, doing: `removing network "${name}"` }),
    );
  }

  async listNetworks(filters: Filters): Promise<NetworkInspect[]> {
    return (
      await this.#conn.json<NetworkInspect[]>({
        method: 'GET',
        path: '/networks',
        query: { filters: JSON.stringify(filters) },
        doing: 'listing networks',
      })
    ).body;
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

  /** Reads a progress stream to its end; an `error` message in it rejects; silence for `inactivityMs` too. */
  async #progress(
    req: Parameters<EngineConnection['stream']>[0],
    onProgress: ((m: ProgressMessage) => void) | undefined,
    inactivityMs: number,
  ): Promise<void> {
    const abort = new AbortController();
    // The engine answers a pull's headers only once it has reached the registry.
    const res = await this.#conn.stream({ ...req, timeoutMs: inactivityMs }, abort.signal);
    let idle = setTimeout(() => abort.abort(), inactivityMs);
    try {
      for await (const message of ndjson<ProgressMessage>(res)) {
        clearTimeout(idle);
        idle = setTimeout(() => abort.abort(), inactivityMs);
        const error = message.error ?? message.errorDetail?.message;
        // The engine's own refusal, reported inside the stream (its status was already 200).
        if (error) throw new DockerEngineError(req.doing, 200, error);
        onProgress?.(message);
      }
    } catch (err) {
      if (abort.signal.aborted)
        throw new Error(`${req.doing}: no progress for ${Math.round(inactivityMs / 1000)} s; gave up`, { cause: err });
      throw err;
    } finally {
      clearTimeout(idle);
      abort.abort();
    }
  }
}

/**
 * `X-Registry-Auth`: base64url of `{ username, password, serveraddress }`, padded: engines before
 * 23 decode it with Go's padded URL encoding and, failing, pull with no credential at all.
 */
export function registryAuthHeader(auth: RegistryCredential, serveraddress: string): string {
  const encoded = Buffer.from(
    JSON.stringify({ username: auth.username, password: auth.password, serveraddress }),
  ).toString('base64url');
  return encoded.padEnd(Math.ceil(encoded.length / 4) * 4, '=');
}

const short = (id: string): string => (/^[0-9a-f]{64}$/.test(id) ? id.slice(0, 12) : `"${id}"`);

async function orNull<T>(call: Promise<{ body: T }>): Promise<T | null> {
  try {
    return (await call).body;
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

async function gone(call: Promise<unknown>): Promise<boolean> {
  try {
    await call;
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
