/**
 * The agent protocol's messages (docs/fleet.md): what `gantry agent` and the control plane send
 * each other over `/agent/v1`. Shared by both sides; nothing here does I/O.
 */
import type { HealthProbe } from '../domain/image-spec.js';
import type { Cloud } from '../domain/catalog.js';
import type {
  ImagePreparation,
  InstanceOwner,
  InstanceSpec,
  InstanceStats,
  InstanceStatus,
  PreparedImage,
  ShellRequest,
} from '../runtime/runtime.js';

export const AGENT_API_PREFIX = '/agent/v1';

/** The agents' longest operations long-poll (docs/fleet.md); `fleet.pollWaitMs` is at most this. */
export const MAX_AGENT_POLL_WAIT_MS = 30_000;

/** A host's discovered capacity, as the agent reports it at join and whenever it changes. */
export interface HostCapacity {
  vcpus: number;
  memoryGb: number;
  diskGb: number;
  gpus: Array<{ uuid: string; name: string; memoryMb: number }>;
  /** the driver's CUDA version, major.minor; null without GPUs */
  cudaVersion: string | null;
  /** how the agent's runtime hands GPUs to containers */
  gpuMode: 'nvidia' | 'env-only';
  /** CPU flavors the host serves CPU pods from */
  cpuFlavors: string[];
  /** what the agent's runtime cannot do on this host, in words */
  notes: string[];
}

export interface JoinRequest {
  token: string;
  name: string;
  publicIp: string;
  portRange: [number, number];
  agentVersion: string;
  capacity: HostCapacity;
}

export interface JoinAnswer {
  hostId: string;
  /** `ghc_<hostId>_<secret>`: shown once, kept by the agent */
  credential: string;
  dataCenterId: string;
  cloud: Cloud;
  heartbeatMs: number;
  pollWaitMs: number;
  /** the control plane's version (absent from control planes before 0.2), checked by the agent (agent-versions.ts) */
  controlPlaneVersion?: string;
}

/** An instance as the agent sees it: the runtime port's status plus its owner label. */
export interface InstanceReport extends Omit<InstanceStatus, 'stats'> {
  owner: InstanceOwner;
  /**
   * Stopped and kept (its container waits for the next start, its storage kept): not running, and
   * not in the agent's runtime's `list()`. A full report lists these too, so a restarted control
   * plane knows what each host holds (the runtime port's `attach()` answers them with status null).
   */
  kept?: boolean;
}

export interface OperationAck {
  opId: string;
  ok: boolean;
  /** why it failed, when `ok` is false */
  error?: string;
  /**
   * What an image operation found, when `ok` (absent for the other kinds). An older control plane
   * drops it; the control plane checks its shape before it believes it (fleet-images.ts).
   */
  result?: OperationResult;
}

/** What an image operation answers in its ack: `prepareImage`'s, `discardImage`'s, `preparedImages`'. */
export type OperationResult =
  { pulled: boolean; sizeBytes: number } | { outcome: 'removed' | 'in-use' | 'absent' } | { images: PreparedImage[] };

export interface ReportRequest {
  capacity?: HostCapacity;
  /**
   * The live instances' utilisation at the agent's last sample, by instance id: sent with the
   * heartbeat (at most once per heartbeat), not as changes. An older control plane ignores it.
   */
  stats?: Record<string, InstanceStats>;
  /** `full`: every instance the agent has (after a (re)connect); else only those that changed */
  instances?: { full: boolean; items: InstanceReport[] };
  acks?: OperationAck[];
}

export interface ReportAnswer {
  now: number;
  /** reported instances the control plane does not accept from this host (ignored) */
  refused: Array<{ id: string; reason: string }>;
  /**
   * acknowledgements of operations that are not this host's (unknown ids, another host's): ignored,
   * nothing changed. A repeated ack of the host's own operation is not listed (it is idempotent).
   */
  ignoredAcks: Array<{ opId: string; reason: string }>;
  /**
   * The control plane wants every instance in the next report, soon (a replica started that has not
   * heard this host in full). Absent: no. An agent older than this field sends its next full report
   * at its next reconnect.
   */
  sendFull?: true;
  /**
   * The job API's URL the control plane gives workers: the agent lets its containers reach it
   * through the container firewall (with its own server URLs). An older control plane sends none.
   */
  jobUrl?: string;
}

export type OperationKind =
  | 'start'
  | 'stop'
  | 'remove'
  | 'removeVolume'
  | 'stream'
  | 'suspend'
  | 'resume'
  | 'prepareImage'
  | 'discardImage'
  | 'preparedImages';

/**
 * What a `stream` operation asks the agent to open, and to carry over the connection it dials back
 * to `POST /agent/v1/streams/{session}` (an HTTP upgrade, see fleet-streams.ts): an instance's
 * output (a log follow) or a shell in it (the SSH proxy).
 */
export type StreamRequest =
  | { what: 'output'; sinceMs?: number; tail?: number; follow: boolean }
  | { what: 'shell'; shell: ShellRequest }
  /**
   * The host's tunnel (docs/fleet.md "The tunnel"): the dial-back upgrades to
   * {@link TUNNEL_PROTOCOL} and carries many streams to the host's instances' ports, for as long as
   * either side keeps it. The operation's `instanceId` is empty: the tunnel is the host's.
   * `limits`: the agent's side of the bounds (config `fleet.tunnels`); an older control plane
   * sends none and the agent keeps its defaults.
   */
  | { what: 'tunnel'; limits?: AgentTunnelLimits };

/** The bounds the agent keeps on a tunnel (config `fleet.tunnels`, handed with each tunnel asked for). */
export interface AgentTunnelLimits {
  /** streams the tunnel carries at once */
  maxStreams: number;
  /** tunnels the agent holds at once */
  maxTunnels: number;
  /** container connections being dialed at once on the tunnel */
  maxDialing: number;
  /** the most a stream's window grows to on the agent's side (what it may hold of an upload) */
  maxWindow: number;
}

/** The `Upgrade` protocol of a stream's dial-back connection. */
export const STREAM_PROTOCOL = 'gantry-stream.1';
/** The `Upgrade` protocol of a tunnel's dial-back connection (tunnel-frames.ts). */
export const TUNNEL_PROTOCOL = 'gantry-tunnel.1';
/** The header carrying a stream's one-time secret on its dial-back. */
export const STREAM_SECRET_HEADER = 'x-gantry-stream-secret';

export type Operation =
  | {
      id: string;
      seq: number;
      kind: 'start';
      instanceId: string;
      spec: InstanceSpec;
      /**
       * The image's readiness probe from the control plane's config (`images`): the agent's runtime
       * runs it and reports `running` only once it passes, as `runtime: docker` does. Absent: none
       * (the instance is `running` once its container starts). An agent older than this field ignores it.
       */
      health?: HealthProbe;
    }
  | {
      id: string;
      seq: number;
      kind: 'stop' | 'remove';
      instanceId: string;
      /**
       * A stop's container goes too, its persistent volume stays (an interrupted pod: docs/pods.md).
       * An agent older than this field ignores it and keeps the container, as for any stop.
       */
      discard?: boolean;
    }
  | { id: string; seq: number; kind: 'removeVolume'; volumeId: string }
  /**
   * Freeze (`suspend`) or continue (`resume`) a running instance through the agent's runtime
   * (FlashBoot, docs/fleet.md): acknowledged once done, or with why not (not running there, a
   * runtime that cannot). An agent older than these kinds acknowledges them with `ok: false`,
   * "unknown operation kind": the control plane then counts the host as one that cannot suspend.
   */
  | { id: string; seq: number; kind: 'suspend' | 'resume'; instanceId: string }
  /**
   * FlashBoot's pre-pulled images on the host (the runtime port's `prepareImage`, `discardImage`,
   * `preparedImages`; docs/fleet.md "Pre-pulled images"), applied through the agent's runtime and
   * answered in the ack's `result`. `prepareImage` carries the owner's account and registry
   * credential as a `start` carries its spec's: sealed in the queue, never logged, never written to
   * the agent's data dir. An agent older than these kinds acknowledges them with `ok: false`,
   * "unknown operation kind": the control plane then pre-pulls nothing more on that host.
   */
  | ({ id: string; seq: number; kind: 'prepareImage' } & ImagePreparation)
  | { id: string; seq: number; kind: 'discardImage'; image: string }
  | { id: string; seq: number; kind: 'preparedImages' }
  /**
   * Open a stream: dial back `POST /agent/v1/streams/{session}` with the `secret`, on the server the
   * operation came from first, then the others (the control plane waiting for it may be another
   * replica), and carry `request` over it. Acknowledged once connected (or failed, with why);
   * redelivered, it is not opened twice.
   */
  | {
      id: string;
      seq: number;
      kind: 'stream';
      instanceId: string;
      session: string;
      secret: string;
      request: StreamRequest;
    };

/** An operation before the queue gave it an id and a sequence number. */
export type NewOperation = Operation extends infer O ? (O extends Operation ? Omit<O, 'id' | 'seq'> : never) : never;
