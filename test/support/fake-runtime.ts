import type { AttachedInstance, InstanceListener, InstanceSpec, InstanceState, InstanceStatus, Runtime } from '../../src/runtime/runtime.js';

const isLive = (state: InstanceState): boolean => state === 'starting' || state === 'running' || state === 'unknown';

/**
 * The runtime port, in memory: instances run until stopped or told to crash. Tests set what
 * `attach()` answers (`attached`), make the engine unreachable (`unavailableReason`), report an
 * instance `unknown` and back (`report`), and read what was asked of it (`stopped`, `removed`,
 * `removedVolumes`).
 */
export class FakeRuntime implements Runtime {
  readonly name = 'fake';
  /** The spec of every instance started here and not stopped or removed. */
  readonly specs = new Map<string, InstanceSpec>();
  /** The status of every instance started or adopted and not stopped or removed. */
  readonly #statuses = new Map<string, InstanceStatus>();
  readonly #listeners = new Set<InstanceListener>();
  failStart = false;
  /** What `attach()` answers: instances a previous server left; the live ones are adopted (inspected and listed). */
  attached: AttachedInstance[] = [];
  /** Why instances cannot be started (what `unavailable()` answers); `start()` rejects with it meanwhile. */
  unavailableReason: string | null = null;
  /** Ids given to `start()`, `stop()` and `remove()`, in order; volume ids given to `removeVolume()`. */
  readonly started: string[] = [];
  readonly stopped: string[] = [];
  readonly removed: string[] = [];
  readonly removedVolumes: string[] = [];
  /** how many times list() was called */
  lists = 0;

  async attach(): Promise<AttachedInstance[]> {
    for (const a of this.attached) if (a.status && isLive(a.status.state)) this.#statuses.set(a.id, { ...a.status });
    return this.attached.map((a) => ({ ...a, status: a.status && { ...a.status } }));
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.unavailableReason !== null) throw new Error(this.unavailableReason);
    if (this.failStart) throw new Error('image not found');
    this.specs.set(spec.id, spec);
    this.started.push(spec.id);
    return this.#set({ id: spec.id, state: 'running', startedAt: 0, exitCode: null, reason: null, stats: null });
  }

  async stop(id: string): Promise<void> {
    this.stopped.push(id);
    this.specs.delete(id);
    this.#statuses.delete(id);
  }

  async remove(id: string): Promise<void> {
    this.removed.push(id);
    this.specs.delete(id);
    this.#statuses.delete(id);
  }

  async removeVolume(volume: { kind: 'network'; volumeId: string }): Promise<void> {
    this.removedVolumes.push(volume.volumeId);
  }

  async inspect(id: string): Promise<InstanceStatus | null> {
    const status = this.#statuses.get(id);
    return status ? { ...status } : null;
  }

  async list(): Promise<InstanceStatus[]> {
    this.lists++;
    return [...this.#statuses.values()].map((s) => ({ ...s }));
  }

  onChange(listener: InstanceListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {}

  unavailable(): string | null {
    return this.unavailableReason;
  }

  /** The instance's process exits on its own. */
  crash(id: string, exitCode = 1): void {
    const status = this.#statuses.get(id);
    this.#set({ ...(status ?? { id, startedAt: 0, stats: null }), state: 'exited', exitCode, reason: `process exited with code ${exitCode}` });
  }

  /** The runtime sees the instance in `state` now (`unknown`: its engine went away; `running`: back). */
  report(id: string, state: InstanceState, reason: string | null = null): void {
    const status = this.#statuses.get(id);
    if (!status) throw new Error(`no instance "${id}"`);
    this.#set({ ...status, state, reason });
  }

  #set(status: InstanceStatus): InstanceStatus {
    this.#statuses.set(status.id, status);
    for (const l of [...this.#listeners]) l({ ...status });
    return { ...status };
  }
}
