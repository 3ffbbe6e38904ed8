/**
 * The shapes of the Engine API (v1.41+) that the Docker runtime reads and writes: only the fields
 * used, as the engine spells them.
 */

export type Labels = Record<string, string>;

export interface EngineInfo {
  ID: string;
  ServerVersion: string;
  /** `overlay2`, `btrfs`, … */
  Driver: string;
  /** e.g. `[["Backing Filesystem", "extfs"], …]` */
  DriverStatus: [string, string][] | null;
  NCPU: number;
  MemTotal: number;
  LoggingDriver: string;
  OperatingSystem: string;
  Runtimes?: Record<string, unknown> | null;
  DefaultRuntime?: string;
  /** The engine host's name: discovery's default host id. */
  Name?: string;
  /** Where the engine keeps images, containers and volumes. */
  DockerRootDir?: string;
  /** CDI spec directories; empty when CDI is off (API 1.45+). */
  CDISpecDirs?: string[] | null;
  /** Devices the engine discovered, e.g. `{ Source: 'cdi', ID: 'nvidia.com/gpu=0' }` (API 1.50+). */
  DiscoveredDevices?: Array<{ Source?: string; ID?: string }> | null;
}

export interface ImageInspect {
  Id: string;
  RepoTags: string[] | null;
  /** `repository@sha256:…` for each repository it was pulled from */
  RepoDigests?: string[] | null;
  /** bytes */
  Size?: number;
}

/** An entry of `GET /images/json`. */
export interface ImageSummary {
  Id: string;
  RepoTags: string[] | null;
  RepoDigests: string[] | null;
}

/** `GET /distribution/{name}/json`: what the registry holds under a reference. */
export interface DistributionInspect {
  Descriptor: { mediaType: string; digest: string; size: number };
}

export interface PortBindingSpec {
  HostIp: string;
  HostPort: string;
}

export interface MountSpec {
  Type: 'volume' | 'bind' | 'tmpfs';
  Source: string;
  Target: string;
  ReadOnly?: boolean;
}

interface DeviceRequest {
  Driver: string;
  Count?: number;
  DeviceIDs?: string[];
  Capabilities: string[][];
}

export interface EndpointSettings {
  Aliases?: string[];
  IPAMConfig?: { IPv4Address?: string };
}

/** The body of `POST /containers/create`. */
export interface ContainerCreateBody {
  Image: string;
  Hostname?: string;
  Env: string[];
  /** absent: the image's own ENTRYPOINT */
  Entrypoint?: string[];
  /** absent: the image's own CMD (only without an `Entrypoint`: with one, the image's CMD is not used) */
  Cmd?: string[];
  Labels: Labels;
  ExposedPorts?: Record<string, Record<string, never>>;
  Tty: false;
  OpenStdin: false;
  AttachStdin: false;
  AttachStdout: false;
  AttachStderr: false;
  HostConfig: {
    NetworkMode?: string;
    PortBindings?: Record<string, PortBindingSpec[]>;
    NanoCpus?: number;
    Memory?: number;
    /** memory + swap; equal to Memory: no swap */
    MemorySwap?: number;
    StorageOpt?: Record<string, string>;
    Mounts?: MountSpec[];
    DeviceRequests?: DeviceRequest[];
    RestartPolicy: { Name: 'no' | 'always' | 'unless-stopped' | 'on-failure' };
    PidsLimit?: number;
    /** bytes of `/dev/shm` */
    ShmSize?: number;
    Ulimits?: Array<{ Name: string; Soft: number; Hard: number }>;
    LogConfig?: { Type: string; Config: Record<string, string> };
    CapDrop?: string[];
    SecurityOpt?: string[];
  };
  NetworkingConfig?: { EndpointsConfig: Record<string, EndpointSettings> };
}

export interface ContainerState {
  /** `created`, `running`, `paused`, `restarting`, `removing`, `exited`, `dead` */
  Status: string;
  Running: boolean;
  Paused: boolean;
  Restarting: boolean;
  OOMKilled: boolean;
  Dead: boolean;
  Pid: number;
  ExitCode: number;
  Error: string;
  /** RFC 3339; `0001-01-01T00:00:00Z` when never */
  StartedAt: string;
  FinishedAt: string;
}

export interface ContainerInspect {
  Id: string;
  /** `/name` */
  Name: string;
  Config: {
    Image: string;
    Labels: Labels | null;
    Env: string[] | null;
    Entrypoint?: string[] | null;
    Cmd?: string[] | null;
  };
  State: ContainerState;
  HostConfig: { Memory?: number; NanoCpus?: number; NetworkMode?: string };
  NetworkSettings?: {
    Networks?: Record<string, { NetworkID?: string; IPAddress?: string; Gateway?: string }> | null;
    /** `8888/tcp` → where it is published on the host */
    Ports?: Record<string, Array<{ HostIp: string; HostPort: string }> | null> | null;
  };
  /** bytes of the writable layer: only with `?size=true` */
  SizeRw?: number;
}

/**
 * The part of `GET /containers/{id}/stats?stream=false&one-shot=true` the sampler reads. With
 * one-shot the engine does not wait for a second reading, so `precpu_stats` is empty: CPU use is
 * the difference between two of our own samples.
 */
export interface ContainerStats {
  /** RFC 3339 with nanoseconds: when the engine read the figures */
  read: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number }; online_cpus?: number };
  memory_stats?: {
    usage?: number;
    limit?: number;
    /** cgroup v2: `inactive_file`; v1: `total_inactive_file` (page cache the kernel can drop) */
    stats?: { inactive_file?: number; total_inactive_file?: number };
  };
}

export interface ContainerSummary {
  Id: string;
  /** `["/name"]` */
  Names: string[];
  Image: string;
  Labels: Labels | null;
  /** `created`, `running`, `exited`, … */
  State: string;
  Status: string;
  /** when it was created, Unix seconds */
  Created: number;
  /** what the list reports of the host config: its network mode */
  HostConfig?: { NetworkMode?: string };
  /** the networks it is connected to, by name */
  NetworkSettings?: { Networks?: Record<string, { NetworkID?: string; IPAddress?: string }> | null };
}

export interface VolumeInspect {
  Name: string;
  Driver: string;
  Mountpoint: string;
  Labels: Labels | null;
}

export interface NetworkInspect {
  Id: string;
  Name: string;
  Driver: string;
  Labels: Labels | null;
  /** driver options (`com.docker.network.bridge.name`) */
  Options?: Record<string, string> | null;
  IPAM: { Config: { Subnet?: string; Gateway?: string }[] | null };
}

/** One message of `GET /events`. */
export interface EngineEvent {
  Type: string;
  /** `create`, `start`, `die`, `oom`, `kill`, `stop`, `destroy`, … */
  Action: string;
  Actor: { ID: string; Attributes: Record<string, string> | null };
  /** seconds since the epoch */
  time: number;
  timeNano: number;
}

/** One message of a pull's or an import's progress stream. */
export interface ProgressMessage {
  status?: string;
  progress?: string;
  id?: string;
  error?: string;
  errorDetail?: { message?: string };
}
