import type { AttachedInstance, InstanceListener, InstanceSpec, InstanceStatus, Runtime } from '../../src/runtime/runtime.js';

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
 */
export class FakeRuntime implements Runtime {
  /** Images with agreed behaviour: `crashing` exits with code 3 right after its start; any other runs until stopped. */
  static readonly IMAGES = { idle: 'fake/idle', crashing: 'fake/crashing' } as const;
  readonly name = 'fake';
  readonly #engine: FakeEngine;
  readonly #listeners = new Set<InstanceListener>();
  #closed = false;
  failStart = false;
  /** how many times list() was called */
  lists = 0;

  constructor(engine: FakeEngine = { specs: new Map(), statuses: new Map(), kept: new Map() }) {
    this.#engine = engine;
  }

  /** The instances started and not stopped, by id, with the spec each was started with. */
  get specs(): Map<string, InstanceSpec> {
    return this.#engine.specs;
  }

  /** A runtime over the same instances, as a restarted server builds it. */
  reopen(): FakeRuntime {
    return new FakeRuntime(this.#engine);
  }

  async attach(): Promise<AttachedInstance[]> {
    const { specs, statuses, kept } = this.#engine;
    return [
      ...[...specs.values()].map((spec) => ({ id: spec.id, owner: spec.owner, status: copy(statuses.get(spec.id)!) })),
      ...[...kept.values()].map((spec) => ({ id: spec.id, owner: spec.owner, status: null })),
    ];
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.#closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    if (this.failStart) throw new Error('image not found');
    const { specs, statuses, kept } = this.#engine;
    const state = statuses.get(spec.id)?.state;
    if (state === 'starting' || state === 'running') throw new Error(`instance "${spec.id}" is already ${state}; stop it before starting it again`);
    kept.delete(spec.id);
    specs.set(spec.id, spec);
    const status: InstanceStatus = { id: spec.id, state: 'running', startedAt: 0, exitCode: null, reason: null, stats: null };
    statuses.set(spec.id, status);
    this.#emit(status);
    if (spec.image === FakeRuntime.IMAGES.crashing) {
      setImmediate(() => {
        if (statuses.get(spec.id) === status) this.crash(spec.id, 3, 'boom: model file missing');
      });
    }
    return copy(status);
  }

  async stop(id: string): Promise<void> {
    const spec = this.#engine.specs.get(id);
    if (!spec) return;
    this.#engine.specs.delete(id);
    this.#engine.statuses.delete(id);
    this.#engine.kept.set(id, spec);
  }

  async remove(id: string): Promise<void> {
    await this.stop(id);
    this.#engine.kept.delete(id);
  }

  async removeVolume(): Promise<void> {}

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

  /** The instance's process exits on its own. */
  crash(id: string, exitCode = 1, output = ''): void {
    const current = this.#engine.statuses.get(id);
    if (!current) return;
    const reason = `process exited with code ${exitCode}${output ? `; last output:\n${output}` : ''}`;
    const status: InstanceStatus = { ...current, state: 'exited', exitCode, reason, stats: null };
    this.#engine.statuses.set(id, status);
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
