/**
 * What a runtime is to the rest of Gantry: a module (src/runtime/<kind>/module.ts, listed in
 * src/runtime/registry.ts) that names its kind, declares what it can do, says where its hosts come
 * from and what the config gives it, and builds itself from one factory signature. Rules that
 * depend on the runtime ask these declarations, never the kind's name (test/runtime-kinds.test.ts
 * holds that). docs/runtimes.md "Adding a runtime" walks through writing one.
 */
import type { Logger } from 'pino';
import type { TObject } from '@sinclair/typebox';
import type { IsolationConditions } from './account-isolation.js';
import type { Catalog, Host } from '../domain/catalog.js';
import type { Clock } from '../domain/clock.js';
import type { ImageSpec } from '../domain/image-spec.js';
import type { AgentsConfig } from '../fleet/agents-config.js';
import type { FleetService } from '../fleet/fleet-service.js';
import type { FleetStreams } from '../fleet/fleet-streams.js';
import type { FleetTunnels } from '../fleet/fleet-tunnels.js';
import type { FleetWiring } from '../fleet/fleet-wiring.js';
import type { Db } from '../store/database.js';
import type { PostgresNotifyRelay } from '../store/notify-relay.js';
import type { HostFeed } from './host-feed.js';
import type { Runtime } from './runtime.js';
import type { RuntimeConfig, RuntimeSection } from './runtime-config.js';

/** What a runtime can do. Each is a fact of the runtime, the same in every deployment. */
interface RuntimeCapabilities {
  /** Its hosts come and go while the server runs (its host feed changes). */
  liveHosts: boolean;
  /** It pins an instance to GPUs by their UUIDs (not only by index). */
  gpuPinningByUuid: boolean;
  /**
   * It runs the spec's `entrypoint` in place of the image's ENTRYPOINT (a pod's start command
   * override: REST v1 `dockerEntrypoint`, an `entrypoint` in the JSON form of `args`/`dockerArgs`).
   * Without it the pods service refuses such a pod (400 ENTRYPOINT_NOT_SUPPORTED) and the runtime
   * refuses such a start.
   */
  entrypointOverride: boolean;
  /** HTTP to an instance goes through an agent on its host (the proxy cannot dial it directly). */
  httpThroughAgent: boolean;
  /**
   * A stopped instance keeps what it had and starts again from it (stop/start keeps the container).
   * Not FlashBoot's freeze of a running instance: that is the port's `suspend`/`resume`, present on
   * the runtime that can.
   */
  suspendResume: boolean;
  /** It pulls images from registries (so the registry policy, runtime/registry-guard.ts, applies). */
  imagePrePull: boolean;
  /** It installs a firewall that keeps instances from their host's services (`allowJobUrls`). */
  hostFirewall: boolean;
}

/** Where placement's hosts come from. */
type HostSource =
  /** the config's `fleet.hosts` (a demo fleet on this machine) */
  | 'declared'
  /** discovered from the runtime's engine at start; the config declares none */
  | 'discovered'
  /** the hosts whose agent joined, as they come and go */
  | 'joined';

/**
 * What of the config the runtimes read (config.ts's `Config` is one): the `runtime` section, each
 * runtime's own part of it declared in its folder, and the settings the server shares with them.
 */
export interface RuntimeModuleConfig {
  runtime: RuntimeConfig;
  images: Record<string, ImageSpec>;
  dataDir: string;
  catalog: Catalog;
  /** The hosts the config declares (`hostSource: 'declared'`). */
  fleet: Host[];
  agents: AgentsConfig;
  pods: { stopGraceMs: number };
}

/** A runtime's own section of the config: where it sits in the file, and its keys and defaults. */
interface RuntimeConfigSection {
  /** `runtime.docker` */
  readonly path: string;
  readonly schema: TObject;
}

/** What the server gives every runtime's factory; each takes what it needs. */
export interface RuntimeFactoryDeps<Prepared = unknown> {
  config: RuntimeModuleConfig;
  clock: Clock;
  /** the server's logger: the runtime logs as `component: runtime` (its other parts as their own) */
  logger: Logger;
  db: Db;
  /** Wake-ups across replicas (PostgreSQL only). */
  relay: PostgresNotifyRelay | null;
  /** Joined hosts and their agents' protocol (docs/fleet.md). */
  agents: FleetService;
  /**
   * The pods' usage on a host: paused while the host is lost, resumed when it shows their
   * instances again. Calls come once the server runs (the pod controller is built over the runtime).
   */
  usage: {
    pause(hostId: string, at: number): Promise<void>;
    resume(podIds: readonly string[], at: number): Promise<void>;
  };
  /** What `prepare()` answered (undefined for a module without it). */
  prepared: Prepared;
}

/** What `prepare()` is given: what exists before anything opens. */
export interface RuntimePrepareDeps {
  config: RuntimeModuleConfig;
  logger: Logger;
  /** The environment tools the runtime runs find their commands in (nvidia-smi). @default process.env */
  env?: NodeJS.ProcessEnv;
  /** The isolation defences the runtime puts in place, each on by default (only the isolation tests take one away). */
  defences?: { accountNetworks?: boolean; hardening?: boolean };
}

/** A runtime, built, and the parts it owns that the server runs beside it. */
export interface BuiltRuntime {
  runtime: Runtime;
  /** The hosts placement uses, as they change (the inventory follows it). */
  hosts: HostFeed;
  /** The joined hosts' events, fed to the runtime and the host feed (`start()` before `attach()`). */
  fleetWiring?: FleetWiring;
  /** Streams to agents (an instance's output, a shell), opened when an agent dials back. */
  fleetStreams?: FleetStreams;
  /** The agents' tunnels (the pod proxy's way in), for `/metrics`. */
  fleetTunnels?: Pick<FleetTunnels, 'open'>;
}

export interface RuntimeModule<Prepared = unknown> {
  /** The config's `runtime.kind` that picks it (and `Runtime.name`). */
  readonly kind: string;
  readonly capabilities: RuntimeCapabilities;
  readonly hostSource: HostSource;
  /**
   * Its own section of the config, if it has one: the schema in its folder (`config.ts`), which the
   * config file's schema holds at `path` (runtime-config.ts composes the `runtime` section).
   */
  readonly configSection: RuntimeConfigSection | null;
  /** Images run as commands of this machine (each needs a `command` in the config's `images`), not as container images. */
  readonly imagesAreCommands: boolean;
  /**
   * Checks of the config that hold only when this runtime runs (a setting the others never read
   * must not stop them); refuses with the config's error. `source(path)`: the environment
   * variable a value came from, or the path itself, for the message.
   */
  checkConfig?(section: RuntimeSection, source: (path: string) => string): void;
  /** What the deployment `config` describes does to keep accounts apart on this runtime. */
  isolation(config: Pick<RuntimeModuleConfig, 'runtime'>): IsolationConditions;
  /**
   * Checks that may refuse the start before anything opens (an engine that does not answer: no
   * database is created); what it answers goes to `create()` as `prepared`. Refuses with
   * `RuntimeStartRefused`.
   */
  prepare?(deps: RuntimePrepareDeps): Promise<Prepared>;
  /** Builds the runtime. */
  create(deps: RuntimeFactoryDeps<Prepared>): Promise<BuiltRuntime>;
  /** How the startup line names it. @default `runtime: <kind>, hosts: <count>` */
  describe?(config: RuntimeModuleConfig, hosts: readonly Host[]): string;
}

/** A start the operator has to act on: the CLI prints the message as it stands. */
export class RuntimeStartRefused extends Error {
  override readonly name = 'RuntimeStartRefused';
}
