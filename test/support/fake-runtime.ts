import type { AttachedInstance, InstanceListener, InstanceSpec, InstanceStatus, Runtime } from '../../src/runtime/runtime.js';

/** The runtime port, in memory: instances run until stopped or told to crash. */
export class FakeRuntime implements Runtime {
  readonly name = 'fake';
  readonly specs = new Map<string, InstanceSpec>();
  readonly #listeners = new Set<InstanceListener>();
  failStart = false;
  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.failStart) throw new Error('image not found');
    this.specs.set(spec.id, spec);
    return this.#status(spec.id, 'running');
  }
  async stop(id: string): Promise<void> {
    this.specs.delete(id);
  }
  async inspect(id: string): Promise<InstanceStatus | null> {
    return this.specs.has(id) ? this.#status(id, 'running') : null;
  }
  /** how many times list() was called */
  lists = 0;
  async list(): Promise<InstanceStatus[]> {
    this.lists++;
    return [...this.specs.keys()].map((id) => this.#status(id, 'running'));
  }
  onChange(listener: InstanceListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  async close(): Promise<void> {}
  async attach(): Promise<AttachedInstance[]> {
    return [];
  }
  async remove(id: string): Promise<void> {
    this.specs.delete(id);
  }
  async removeVolume(): Promise<void> {}
  /** The instance's process exits on its own. */
  crash(id: string, exitCode = 1): void {
    for (const l of this.#listeners) l({ ...this.#status(id, 'exited'), exitCode, reason: `process exited with code ${exitCode}` });
  }
  #status(id: string, state: InstanceStatus['state']): InstanceStatus {
    return { id, state, startedAt: 0, exitCode: null, reason: null, stats: null };
  }
}
