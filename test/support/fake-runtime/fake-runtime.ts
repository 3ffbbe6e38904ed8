import type {
  AttachedInstance,
  InstanceListener,
  InstanceSpec,
  InstanceState,
  InstanceStatus,
  Runtime,
  StopOptions,
} from '../../../src/runtime/runtime.js';

const isLive = (state: InstanceState): boolean => state === 'starting' || state === 'running' || state === 'unknown';

/**
 * What a fake's instances are, kept apart from the runtime object as an engine's containers are:
 * shared with the runtimes `reopen()` makes, untouched by `close()`.
 */
interface FakeEngine {
  /** started and not stopped: the spec each was started with */
  specs: Map<string, InstanceSpec>;
  statuses: Map<string, InstanceStatus>;
  /** stopped and kept until `remove()`, as a container runtime keeps a stopped container */
  kept: Map<string, InstanceSpec>;
}

/**
 * The runtime port, in memory, for service tests: instances run until stopped, or until told to
 * crash. It follows the runtime contract (test/fake-runtime.test.ts runs it) as a runtime that
 * hands its instances over across `close()` (like the Docker runtime) and runs nothing, so no
 * instance serves HTTP.
 *
 * Tests may also set what `attach()` answers (`attached`: instances a previous server left; the
 * live ones are adopted), make the engine unreachable (`unavailableReason`) or one host
 * (`hostsAway`), refuse to stop an instance (`refuseStop`), report an instance
 * `unknown` and back (`report`), and read what was asked of it (`started`, `stopped`, `removed`,
 * `removedVolumes`).
 */
export class FakeRuntime implements Runtime {
  /** Images with agreed behaviour: `crashing` exits with code 3 right after its start; any other runs until stopped. */
  static readonly IMAGES = { idle: 'fake/idle', crashing: 'fake/crashing' } as const;
  /** `fake`, unless a test stands it in for a runtime whose name rules depend on (`docker`). */
  readonly name: string;
  readonly #engine: FakeEngine;
  readonly #listeners = new Set<InstanceListener>();
  #closed = false;
  failStart = false;
  /** Instances whose `stop()` rejects with this message (the instance runs on, as when its engine refuses). */
  readonly refuseStop = new Map<string, string>();
  /** When set, what `attach()` answers instead of the instances of its engine. */
  attached: AttachedInstance[] | null = null;
  /** Why instances cannot be started (what `unavailable()` answers); `start()` rejects with it meanwhile. */
  unavailableReason: string | null = null;
  /** Hosts that are away (a fleet host unreachable or revoked), with why: what `unavailable(hostId)` answers for them. */
  readonly hostsAway = new Map<string, string>();
  /** Ids given to `start()`, `stop()` and `remove()`, in order; volume ids given to `removeVolume()`. */
  readonly started: string[] = [];
  readonly stopped: string[] = [];
  readonly removed: string[] = [];
  /** ids stopped with `discard` (their container gone, their volume kept) */
  readonly discarded: string[] = [];
  readonly removedVolumes: string[] = [];
  /** how many times list() was called */
  lists = 0;

  constructor(
    options: { name?: string } = {},
    engine: FakeEngine = { specs: new Map(), statuses: new Map(), kept: new Map() },
  ) {
    this.name = options.name ?? 'fake';
    this.#engine = engine;
  }

  /** The instances started and not stopped, by id, with the spec each was started with. */
  get specs(): Map<string, InstanceSpec> {
    return this.#engine.specs;
  }

  /** A runtime over the same instances, as a restarted server builds it. */
  reopen(): FakeRuntime {
    return new FakeRuntime({ name: this.name }, this.#engine);
  }

  async attach(): Promise<AttachedInstance[]> {
    const { specs, statuses, kept } = this.#engine;
    if (this.attached) {
      for (const a of this.attached) if (a.status && isLive(a.status.state)) statuses.set(a.id, copy(a.status));
      return this.attached.map((a) => ({ ...a, status: a.status && copy(a.status) }));
    }
    return [
      ...[...specs.values()].map((spec) => ({ id: spec.id, owner: spec.owner, status: copy(statuses.get(spec.id)!) })),
      ...[...kept.values()].map((spec) => ({ id: spec.id, owner: spec.owner, status: null })),
    ];
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.#closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    if (this.unavailableReason !== null) throw new Error(this.unavailableReason);
    if (this.failStart) throw new Error('image not found');
    const { specs, statuses, kept } = this.#engine;
    const state = statuses.get(spec.id)?.state;
    if (state === 'starting' || state === 'running')
      throw new Error(`instance "${spec.id}" is already ${state}; stop it before starting it again`);
    this.started.push(spec.id);
    kept.delete(spec.id);
    specs.set(spec.id, spec);
    const status: InstanceStatus = {
      id: spec.id,
      state: 'running',
      startedAt: 0,
      exitCode: null,
      reason: null,
      stats: null,
    };
    statuses.set(spec.id, status);
    this.#emit(status);
    if (spec.image === FakeRuntime.IMAGES.crashing) {
      setImmediate(() => {
        if (statuses.get(spec.id) === status) this.crash(spec.id, 3, 'boom: model file missing');
      });
    }
    return copy(status);
  }

  async stop(id: string, options: StopOptions = {}): Promise<void> {
    this.stopped.push(id);
    const refused = this.refuseStop.get(id);
    if (refused !== undefined) throw new Error(refused);
    this.#stop(id);
    if (options.discard) {
      this.discarded.push(id);
      this.#engine.kept.delete(id);
    }
  }

  async remove(id: string): Promise<void> {
    this.removed.push(id);
    this.#stop(id);
    this.#engine.kept.delete(id);
  }

  async removeVolume(volume: { kind: 'network'; volumeId: string }): Promise<void> {
    this.removedVolumes.push(volume.volumeId);
  }

  async inspect(id: string): Promise<InstanceStatus | null> {
    const status = this.#engine.statuses.get(id);
    return status ? copy(status) : null;
  }

  async list(): Promise<InstanceStatus[]> {
    this.lists++;
    return [...this.#engine.statuses.values()].map(copy);
  }

  onChange(listener: InstanceListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Detaches: the instances run on, for a runtime `reopen()` made to adopt. */
  async close(): Promise<void> {
    this.#closed = true;
  }

  unavailable(hostId?: string): string | null {
    return this.unavailableReason ?? (hostId === undefined ? null : (this.hostsAway.get(hostId) ?? null));
  }

  /** The instance's process exits on its own. */
  crash(id: string, exitCode = 1, output = ''): void {
    const current = this.#engine.statuses.get(id) ?? {
      id,
      state: 'running' as const,
      startedAt: 0,
      exitCode: null,
      reason: null,
      stats: null,
    };
    const reason = `process exited with code ${exitCode}${output ? `; last output:\n${output}` : ''}`;
    this.#set({ ...current, state: 'exited', exitCode, reason, stats: null });
  }

  /** The runtime sees the instance in `state` now (`unknown`: its engine went away; `running`: back). */
  report(id: string, state: InstanceState, reason: string | null = null): void {
    const status = this.#engine.statuses.get(id);
    if (!status) throw new Error(`no instance "${id}"`);
    this.#set({ ...status, state, reason });
  }

  #stop(id: string): void {
    const spec = this.#engine.specs.get(id);
    this.#engine.specs.delete(id);
    this.#engine.statuses.delete(id);
    if (spec) this.#engine.kept.set(id, spec);
  }

  #set(status: InstanceStatus): void {
    this.#engine.statuses.set(status.id, status);
    this.#emit(status);
  }

  #emit(status: InstanceStatus): void {
    for (const listener of [...this.#listeners]) {
      try {
        const result: unknown = listener(copy(status));
        if (result instanceof Promise) result.catch(() => undefined);
      } catch {
        // a listener's bug is its own
      }
    }
  }
}

const copy = (status: InstanceStatus): InstanceStatus => ({ ...status, stats: status.stats && { ...status.stats } });
