/**
 * The runtime port. A runtime starts, stops and inspects instances; pods and serverless workers
 * are both instances. Adapters: process (default), docker; kubernetes maps onto the same port
 * (docs/runtimes.md).
 *
 * The port assumes instances outlive the control plane:
 * - `attach()` is called once, before anything else, and answers every instance the runtime finds
 *   for this installation (running or kept stopped), with the owner it was labelled with, so the
 *   services adopt what they still have a record of; what nobody claims within a grace period is
 *   an orphan and is `remove()`d (src/runtime/orphan-collector.ts).
 * - `close()` detaches: instances that a later `attach()` can adopt (containers) keep running.
 *   An adapter whose instances cannot be adopted by another server (the process runtime: its
 *   instances are its children) stops them instead, and makes sure none outlives a server that
 *   died without closing (a watchdog).
 * - `stop()` keeps the instance's storage (its persistent volume; a container runtime also keeps
 *   the stopped container and starts it again when the next `start()` has the same spec);
 *   `remove()` deletes everything the instance had (pod terminate, orphans).
 */
import type { OnReadOpts } from 'node:net';
import type { Duplex } from 'node:stream';
import type { HealthProbe } from '../domain/image-spec.js';

interface PortBinding {
  /** port inside the instance (the `<port>` of `<port>/<protocol>`) */
  private: number;
  /** port on the host that reaches it */
  public: number;
  /** `http` or `tcp` */
  protocol: string;
}

/**
 * Storage an instance mounts, named by what it is rather than by where it lives: the adapter
 * decides where the data sits (a folder under the data dir, a Docker volume, a PVC).
 */
export type VolumeSource =
  /** The instance's own volume (a pod's `mounts.persistent`): survives stop/start/restart, goes with `remove()`. */
  | { kind: 'persistent'; path: string }
  /** A network volume: shared by every instance that mounts it, outlives them; goes with `removeVolume()`. */
  | { kind: 'network'; volumeId: string; path: string };

/** Who an instance belongs to: written on it (labels) so a restarted server can tell what it finds. */
export interface InstanceOwner {
  kind: 'pod' | 'worker';
  accountId: string;
  /** the worker's endpoint */
  endpointId?: string;
}

/**
 * The network every instance of an account joins on a container runtime, unless its spec names
 * another (a cluster's): accounts never share one. Globally networked pods (spec 2.8) answer to
 * their DNS names there.
 */
export const accountNetworkName = (accountId: string): string => `acct-${accountId}`;

export interface InstanceSpec {
  /** Stable id: the pod id, or the serverless worker id. */
  id: string;
  owner: InstanceOwner;
  image: string;
  /** The container command's arguments (spec 2.1 `args`), split like a shell would (split-args.ts); empty = the image's own. */
  args: string;
  /**
   * Replaces the image's ENTRYPOINT, word for word; `args` is then the whole command after it (an
   * empty one does not bring the image's CMD back, as `docker run --entrypoint`). A pod's override
   * (domain/start-command.ts). Only a runtime whose module declares `entrypointOverride` runs it;
   * another refuses the start. @default null: the image's own
   */
  entrypoint?: string[] | null;
  /**
   * The tenant's env (a pod's env; a worker's template env overlaid with its endpoint's): untrusted.
   * A runtime that does not isolate env (the process runtime) screens it before it reaches a
   * process; a container runtime passes it into the container.
   */
  env: Record<string, string>;
  /**
   * Variables the platform sets for this instance (the worker protocol and its key, the password
   * startJupyter generated, the keys startSsh injects, the SDK's skip flags, identity and
   * placement): trusted, never screened, layered over {@link env} so a tenant cannot override them.
   * Every runtime adds the variables of `platformInstanceEnv()` (instance-env.ts) over these.
   */
  platformEnv: Record<string, string>;
  hostId: string;
  /** The GPUs placement assigned, by index on the host (the adapter maps them to devices/UUIDs). */
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  /** Container disk (writable layer) in GB; 0 = no limit asked. */
  diskGb: number;
  ports: PortBinding[];
  volumes: VolumeSource[];
  registryAuth?: { username: string; password: string } | null;
  /**
   * The account's private network, for a globally networked pod (spec 2.8): instances of the same
   * network reach each other by `<id>.<domain>`; null for none. A cluster's members share the
   * cluster's network; its `subnet` (the cluster's overlay CIDR) is the one the network is made
   * with, so each member gets its fixed `ip` (docs/clusters.md).
   */
  network?: { name: string; aliases: string[]; ip: string | null; subnet?: string } | null;
  /**
   * How the instance reaches the control plane's job URL. `host`: it shares the host's network
   * (a worker given a loopback URL); `default`: its own network (pods; workers given a public URL).
   */
  networkMode?: 'default' | 'host';
  /**
   * A readiness probe for this start: the instance is `starting` until it passes (`failed` when it
   * does not within its timeout). The Docker runtime prefers it over the probe its own `images`
   * map gives the image; an agent's runtime has no images map, so the fleet's control plane sends
   * its config's probe with each start (docs/fleet.md) and the agent sets it here. The process
   * runtime reads only its images map. @default the runtime's images map entry's `health`, if any
   */
  health?: HealthProbe | null;
}

/**
 * - `starting`: launched, not yet ready (pulling, created, health check pending);
 * - `running`: ready; `exited`: ended on its own; `failed`: could not start or failed its check;
 * - `suspended`: frozen by {@link Runtime.suspend} (or paused outside Gantry): alive — it holds
 *   its resources, memory and ports, and is not ended — but no process of it runs until
 *   {@link Runtime.resume};
 * - `unknown`: the runtime cannot see it right now (its engine is unreachable); `reason` says why.
 *   It was last seen in the state the caller already holds; nothing is to be done but wait.
 */
export type InstanceState = 'starting' | 'running' | 'suspended' | 'exited' | 'failed' | 'unknown';

/** The states of an instance that is there and holds its resources (placement counts it): not ended. */
export const ALIVE_STATES: ReadonlySet<InstanceState> = new Set(['starting', 'running', 'suspended', 'unknown']);

export interface InstanceStatus {
  id: string;
  state: InstanceState;
  /** ms epoch when the instance's process started */
  startedAt: number | null;
  exitCode: number | null;
  /** Why the instance failed or exited, in words a user can act on. */
  reason: string | null;
  /** Live utilisation, when the runtime can measure it (from its shared sampler, never measured per call). */
  stats: InstanceStats | null;
}

/** An instance's utilisation at the last sample. */
export interface InstanceStats {
  /** percent of the instance's vCPUs, 0-100 */
  cpuUtil: number;
  /** percent of the instance's memory, 0-100 */
  memoryUtil: number;
  memoryBytes: number;
  /**
   * Per assigned GPU (in the order of the spec's `gpuIndices`): utilisation and memory use in
   * percent, read from `nvidia-smi`. Absent where no real figures exist (no GPUs, a host whose GPUs
   * are simulated): never invented.
   */
  gpus?: Array<{ util: number; memoryUtil: number; /** the GPU's UUID (`GPU-…`), when known */ id?: string }>;
}

/** One line of an instance's own output (its stdout and stderr). */
export interface OutputLine {
  /** when it was written, ms epoch */
  ts: number;
  /** without its line ending */
  line: string;
}

/** Which output {@link Runtime.output} answers. */
export interface OutputQuery {
  /** Only lines written at or after this ms epoch. @default all that is kept */
  sinceMs?: number;
  /** Of those, only the last `tail`. @default all */
  tail?: number;
  /** After the kept lines, keep yielding new ones until the instance stops or `signal` aborts. */
  follow: boolean;
  /** Ends the iteration (the reader left). */
  signal: AbortSignal;
}

/** What an interactive shell is opened with. */
export interface ShellRequest {
  cols: number;
  rows: number;
  /** the client's TERM @default 'xterm' */
  term?: string;
}

/**
 * An interactive shell inside an instance, on a terminal: what is written to `stream` is typed
 * into it, what it prints is read from `stream` (a terminal merges stdout and stderr).
 */
export interface ShellSession {
  readonly stream: Duplex;
  /** passes a window size change to the terminal */
  resize(cols: number, rows: number): void;
  /** the shell's exit code once it ended (null when it was killed or the code is unknown) */
  readonly exited: Promise<number | null>;
  /** ends the shell (and whatever it runs) */
  close(): void;
}

/** An instance `attach()` found: its owner label, and its status (null: stopped and kept). */
export interface AttachedInstance {
  id: string;
  owner: InstanceOwner | null;
  status: InstanceStatus | null;
}

export type InstanceListener = (status: InstanceStatus) => void;

/** How {@link Runtime.stop} stops. */
export interface StopOptions {
  /** Deletes the stopped container (and with it the container disk), keeping the persistent volume. @default false */
  discard?: boolean;
}

/** How `Runtime.connect` dials. */
export interface ConnectOptions {
  timeoutMs: number;
  /** The instance's host port for the port dialled, when another replica launched it. */
  hostPort?: number | undefined;
  /**
   * A TCP connection reads into this buffer rather than a new one each read (`net.connect`'s
   * `onread`; the pod proxy's raw connections). A runtime whose connection is not a TCP socket of
   * this process (the fleet's tunnel streams) ignores it: its bytes come as `'data'`.
   */
  onread?: OnReadOpts | undefined;
}

export interface Runtime {
  readonly name: string;
  /**
   * Connects to what already runs, once, before any other call. Answers every instance of this
   * installation it finds; those with a live status are adopted as they are (not restarted).
   * The process runtime kills what a previous server left behind and answers none.
   */
  attach(): Promise<AttachedInstance[]>;
  /** Starts the instance; resolves once it is launched (state `starting` or `running`), rejects when it cannot launch (the reason in the message). */
  start(spec: InstanceSpec): Promise<InstanceStatus>;
  /**
   * Stops it (graceful, then forceful), keeping its storage; it is no longer inspected or listed. A
   * no-op for unknown ids. `discard`: its container (its container disk, its output) goes too and
   * only its persistent volume is kept, as for a pod the reclaim ladder took back (docs/pods.md).
   */
  stop(id: string, options?: StopOptions): Promise<void>;
  /** Stops it if it runs and deletes all it had: the kept container, its persistent volume. A no-op for unknown ids. */
  remove(id: string): Promise<void>;
  /**
   * Deletes a network volume's data (the volume is deleted; no instance mounts it). `dataCenterId`:
   * where the volume is, when the caller knows it (a runtime over many hosts deletes it on each).
   */
  removeVolume(volume: { kind: 'network'; volumeId: string; dataCenterId?: string }): Promise<void>;
  inspect(id: string): Promise<InstanceStatus | null>;
  /** The instances started (or adopted) and not stopped. */
  list(): Promise<InstanceStatus[]>;
  /** Called on every state change (started, became ready, exited, failed, unknown and back). */
  onChange(listener: InstanceListener): () => void;
  /** Detaches (see the module comment). */
  close(): Promise<void>;
  /**
   * The instance's own output, oldest first: the kept lines `query` selects, then (with `follow`)
   * new lines as they are written, until the instance stops or the signal aborts. The output of a
   * stopped instance stays readable until it is removed. Nothing for an unknown id. The runtime
   * bounds what it keeps (rotation), so a reader sees at most that.
   */
  output?(id: string, query: OutputQuery): AsyncIterable<OutputLine>;
  /**
   * Opens an interactive shell on a terminal inside a running instance (the SSH proxy's session).
   * Rejects when the instance does not run, in words a user can act on.
   */
  shell?(id: string, request: ShellRequest): Promise<ShellSession>;
  /**
   * A TCP connection to `port` (a private port of the instance's spec) inside a running instance:
   * the pod HTTP proxy's way in (docs/proxy.md). Rejects, in words a user can act on, when the
   * instance does not run here, the port is not one of its bindings, or nothing accepts there
   * within `timeoutMs`. The process runtime dials the binding's host port on 127.0.0.1; Docker the
   * container's address on its network.
   *
   * `hostPort`: where the instance's `port` is published on its host, as the replica that launched
   * it recorded it (a load-balancing worker another control-plane replica launched). A runtime
   * that does not run the instance itself dials there (the process runtime: 127.0.0.1); others
   * find their way as for their own instances and ignore it.
   */
  connect?(id: string, port: number, options: ConnectOptions): Promise<Duplex>;
  /**
   * Why instances cannot be started right now (the engine is unreachable), or null. Answers from
   * what the runtime already knows; never waits on the engine. `hostId`: the host the instance is
   * placed on, for a runtime over many hosts (the fleet: one host may be unreachable while the
   * others run); a runtime with one engine ignores it. Without it, the runtime as a whole.
   */
  unavailable?(hostId?: string): string | null;
  /**
   * Why this runtime cannot keep accounts apart right now, in words an operator can act on (the
   * container firewall could not be installed; instances an earlier version started are still on a
   * network accounts share); empty when nothing is missing. Known once attach() has answered.
   */
  isolationGaps?(): IsolationGap[];
  /**
   * Lets instances reach the job API at `urls` (each one's address and port; the list replaces the
   * last) through the runtime's container firewall, which keeps every other service of the host
   * and the private ranges out of their reach. Called once the URLs' ports are known, and again
   * when they change.
   */
  allowJobUrls?(urls: readonly string[]): Promise<void>;
  /**
   * Freezes every process of a `running` instance (FlashBoot, docs/runtimes.md): no CPU is used,
   * its memory, its files and its network bindings are kept, and it reads `suspended` until
   * {@link resume}. Idempotent: suspending a suspended instance resolves. Rejects, saying why, for
   * an unknown id or an instance that does not run (starting, ended, being stopped). Present = the
   * runtime can; a runtime over many hosts may still refuse for a host that cannot
   * ({@link canSuspend}).
   */
  suspend?(id: string): Promise<void>;
  /**
   * Continues a suspended instance where it was (`running` again). Idempotent: resuming a running
   * instance resolves. Rejects, saying why, for an unknown id or an instance that is neither.
   */
  resume?(id: string): Promise<void>;
  /**
   * Whether {@link suspend} works for instances on `hostId` as far as the runtime knows now (a
   * fleet host whose agent predates it: no). Absent: wherever `suspend` is present.
   */
  canSuspend?(hostId: string): boolean;
  /**
   * Makes `request.image` present on `hostId` before any start needs it (FlashBoot's pre-pulling,
   * serverless/image-prepull.ts): pulled with the owner's credential when missing, under the rules
   * a start's pull follows (a private image only for an account that proves it may pull it), and
   * recorded as pre-pulled (only what this pulled is ever discarded). Answers whether it pulled
   * (false: the host had it already) and the image's size. Present = the runtime can.
   */
  prepareImage?(hostId: string, request: ImagePreparation): Promise<{ pulled: boolean; sizeBytes: number }>;
  /** The images {@link prepareImage} pulled on `hostId` and still holds. */
  preparedImages?(hostId: string): Promise<PreparedImage[]>;
  /**
   * Removes a pre-pulled image nothing needs any more, and its record: `in-use` (kept, recorded)
   * while a container still uses it, `absent` when the host no longer had it.
   */
  discardImage?(hostId: string, image: string): Promise<'removed' | 'in-use' | 'absent'>;
  /**
   * Whether {@link prepareImage} works on `hostId` as far as the runtime knows now (a fleet host
   * whose agent predates it: no). Absent: wherever `prepareImage` is present.
   */
  canPrepareImages?(hostId: string): boolean;
  /** Whether `image` would run as an idle placeholder (no process: nothing in it runs). */
  runsAsPlaceholder?(image: string): boolean;
  /**
   * The first variable of a tenant's `env` this runtime will not pass to an instance of `image`,
   * or null. Runtimes that isolate env (a container) leave it out; services refuse a refused
   * variable with 400 ENV_NOT_ALLOWED wherever tenant env enters (pods, templates, endpoints).
   */
  refusedEnv?(env: Record<string, string>, image: string): EnvRefusal | null;
}

/** An image to have ready on a host ({@link Runtime.prepareImage}). */
export interface ImagePreparation {
  image: string;
  /** The owner's registry credential (null: a public image). */
  registryAuth: { username: string; password: string } | null;
  /** Whose image it is (logged; a private image is pulled only with this account's credential). */
  accountId: string;
}

/** An image a runtime pre-pulled on a host. */
export interface PreparedImage {
  image: string;
  sizeBytes: number;
  pulledAt: number;
  /** The account it was pulled for (null or absent: not known, e.g. a record or an agent that predates saying so). */
  accountId?: string | null;
}

/** Something that keeps a runtime from holding accounts apart right now. */
export interface IsolationGap {
  /** `firewall`: containers can reach their host's services; `shared-network`: instances sit on a network accounts share */
  kind: 'firewall' | 'shared-network';
  /** in words an operator can act on */
  detail: string;
}

/** A variable a runtime refuses, and why. */
export interface EnvRefusal {
  name: string;
  /** in words a user can act on */
  reason: string;
}
