/**
 * The runtime port. A runtime starts, stops and inspects instances; pods and serverless workers
 * are both instances. Adapters: process (default), docker, kubernetes.
 */

export interface PortBinding {
  /** port inside the instance (the `<port>` of `<port>/<protocol>`) */
  private: number;
  /** port on the host that reaches it */
  public: number;
  protocol: string;
}

export interface VolumeBinding {
  /** storage on the host (a folder under the data dir for the process runtime) */
  hostPath: string;
  /** where the instance sees it */
  path: string;
  kind: 'persistent' | 'network' | 'container';
}

export interface InstanceSpec {
  /** Stable id: the pod id, or the serverless worker id. */
  id: string;
  image: string;
  args: string;
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
   */
  platformEnv: Record<string, string>;
  hostId: string;
  gpuIndices: number[];
  vcpus: number;
  memoryGb: number;
  ports: PortBinding[];
  volumes: VolumeBinding[];
  registryAuth?: { username: string; password: string } | null;
}

export type InstanceState = 'starting' | 'running' | 'exited' | 'failed';

export interface InstanceStatus {
  id: string;
  state: InstanceState;
  /** ms epoch when the instance's process started */
  startedAt: number | null;
  exitCode: number | null;
  /** Why the instance failed or exited, in words a user can act on. */
  reason: string | null;
  /** Live utilisation, when the runtime can measure it. */
  stats: { cpuUtil: number; memoryUtil: number; memoryBytes: number } | null;
}

export type InstanceListener = (status: InstanceStatus) => void;

export interface Runtime {
  readonly name: string;
  /** Starts the instance; resolves once it is launched (state `starting` or `running`), rejects when it cannot launch. */
  start(spec: InstanceSpec): Promise<InstanceStatus>;
  /** Stops it (graceful, then forceful) and forgets it; a no-op for unknown ids. */
  stop(id: string): Promise<void>;
  inspect(id: string): Promise<InstanceStatus | null>;
  list(): Promise<InstanceStatus[]>;
  /** Called on every state change (started, became ready, exited, failed). */
  onChange(listener: InstanceListener): () => void;
  /** Stops every instance (server shutdown). */
  close(): Promise<void>;
  /** Kills instances a previous server left behind (it died without stopping them); answers their ids. */
  reapOrphans?(): Promise<string[]>;
  /** Whether `image` would run as an idle placeholder (no process: nothing in it runs). */
  runsAsPlaceholder?(image: string): boolean;
  /**
   * The first variable of a tenant's `env` this runtime will not pass to an instance of `image`,
   * or null. Runtimes that isolate env (a container) leave it out; services refuse a refused
   * variable with 400 ENV_NOT_ALLOWED wherever tenant env enters (pods, templates, endpoints).
   */
  refusedEnv?(env: Record<string, string>, image: string): EnvRefusal | null;
}

/** A variable a runtime refuses, and why. */
export interface EnvRefusal {
  name: string;
  /** in words a user can act on */
  reason: string;
}
