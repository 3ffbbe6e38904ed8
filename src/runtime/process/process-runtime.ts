/**
 * The process runtime (the default): an instance is a local child process.
 *
 * - An image reference mapped in the config's `images` runs its command as a real process, in its
 *   own process group, in `<dataDir>/instances/<id>/` unless the mapping names a cwd, with the
 *   environment of `instanceEnv()` (instance-env.ts) and its output in `output.log` there.
 * - An UNMAPPED image runs as an idle placeholder: no process, no files, `running` at once and
 *   until stopped, stats all zero. A placeholder is one small object in a map, so thousands cost
 *   next to nothing; it lets any pod be created and driven through its lifecycle.
 *
 * Its instances cannot outlive the server that started them, nor be adopted by the next one: a
 * process is watched through its parent (its exit code and signal reach no one else), its output
 * goes to a file descriptor the parent opened, and a server cannot become the parent of a process
 * it did not start. So `close()` stops every instance, `attach()` kills what a previous server left
 * (orphans.ts) and answers none, and a server killed without closing (kill -9, a crash) leaves a
 * watchdog (watchdog.ts) that stops its instances `orphanGraceMs` later. The state is never
 * `unknown`: the processes are this server's own.
 */
import { rm } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { join } from 'node:path';
import type { ImageSpec } from '../../domain/image-spec.js';
import { dialTcp } from '../dial.js';
import type {
  ConnectOptions,
  AttachedInstance,
  EnvRefusal,
  InstanceListener,
  InstanceSpec,
  InstanceStatus,
  OutputLine,
  OutputQuery,
  Runtime,
  ShellRequest,
  ShellSession,
  StopOptions,
} from '../runtime.js';
import { openProcessShell } from './process-shell.js';
import { tenantEnvRefusal } from './env-policy.js';
import { LogRotator } from './log-rotator.js';
import { OutputStamper } from './output-stamper.js';
import { SharedOutput } from '../shared-output.js';
import { instanceDirOf, reapOrphans, writePidFile } from './orphans.js';
import {
  copyStatus,
  isLive,
  onProcessExit,
  superviseHealth,
  terminateInstance,
  type Instance,
  type LiveProcess,
  type Supervision,
} from './process-instance.js';
import type { ProcessRuntimeOptions } from './process-runtime-options.js';
import { spawnInstance } from './spawn-instance.js';
import { resumeProcess, suspendProcess } from './process-suspend.js';
import { measureAll, UsageMeter } from './usage-meter.js';
import { IntervalSampler } from '../interval-sampler.js';
import { networkVolumeFolderOf, podFolderOf } from './volume-folders.js';
import { Watchdog } from './watchdog.js';

/** @see ProcessRuntimeOptions.orphanGraceMs */
const DEFAULT_ORPHAN_GRACE_MS = 30_000;

type Stats = NonNullable<InstanceStatus['stats']>;
const ZERO_STATS: Stats = Object.freeze({ cpuUtil: 0, memoryUtil: 0, memoryBytes: 0 });

export class ProcessRuntime implements Runtime {
  readonly name = 'process';
  readonly #options: ProcessRuntimeOptions;
  /** A Map, not the config's object: image names are tenant input (`constructor`, `__proto__`). */
  readonly #images: ReadonlyMap<string, ImageSpec>;
  readonly #instances = new Map<string, Instance>();
  /** ids whose start() is between its checks and its registration */
  readonly #launching = new Set<string>();
  readonly #listeners = new Set<InstanceListener>();
  readonly #logs: LogRotator;
  readonly #output: OutputStamper;
  readonly #sharedOutput = new SharedOutput((id, query) => this.#output.read(id, query));
  readonly #watchdog: Watchdog;
  readonly #supervision: Supervision;
  readonly #sampler: IntervalSampler;
  /** start() calls under way, which close() lets finish (each then stops what it started) */
  readonly #inFlight = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: ProcessRuntimeOptions) {
    this.#options = options;
    this.#images = new Map(Object.entries(options.images));
    this.#logs = new LogRotator(options, () => this.#liveLogs());
    const live = (): boolean => !this.#liveLogs().next().done;
    this.#sampler = new IntervalSampler({
      intervalMs: options.statsIntervalMs,
      timers: options.timers,
      logger: options.logger,
      live,
      sample: () => measureAll(this.#liveLogs()),
    });
    this.#output = new OutputStamper({ ...options, maxBytes: this.#logs.maxLogBytes }, () =>
      [...this.#instances].flatMap(([id, i]) => (i.proc && isLive(i) ? [[id, i.proc] as const] : [])),
    );
    this.#watchdog = new Watchdog({
      graceMs: options.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS,
      stopGraceMs: options.stopGraceMs,
      logPath: join(options.dataDir, 'watchdog.log'),
      logger: options.logger,
    });
    this.#supervision = {
      options,
      watchdog: this.#watchdog,
      current: (id, instance) => this.#instances.get(id) === instance,
      emit: (instance) => this.#emit(instance),
    };
  }

  /** The pid of the watchdog while it runs (it starts with the first process instance). For tests and diagnostics. */
  get watchdogPid(): number | null {
    return this.#watchdog.pid;
  }

  /** Its output, stamped as read (output-stamper.ts); its followers share one reader of it (shared-output.ts). */
  output(id: string, query: OutputQuery): AsyncIterable<OutputLine> {
    return this.#sharedOutput.read(id, query);
  }

  /** Never: a process runtime can always start its instances. */
  unavailable(): string | null {
    return null;
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    const starting = this.#start(spec);
    this.#inFlight.add(starting);
    void starting.then(
      () => this.#inFlight.delete(starting),
      () => this.#inFlight.delete(starting),
    );
    return starting;
  }

  async #start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.#closed) throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    if (this.#launching.has(spec.id)) throw new Error(`instance "${spec.id}" is already being started`);
    // The module declares no entrypointOverride: the pods service refuses one with a 400, this is
    // the last word for a pod stored under another runtime, or a worker's template.
    if (spec.entrypoint && spec.entrypoint.length > 0)
      throw new Error(
        `cannot start image "${spec.image}": runtime process runs the command its images entry maps the image to and cannot replace the image's entrypoint (${JSON.stringify(spec.entrypoint)}); run it on runtime docker or a fleet`,
      );
    const existing = this.#instances.get(spec.id);
    if (existing) {
      const { state } = existing.status;
      if (!existing.stopping && isLive(existing)) {
        throw new Error(`instance "${spec.id}" is already ${state}; stop it before starting it again`);
      }
      // A finished instance that was never stopped, or one being stopped: clear it out first.
      await this.stop(spec.id);
      if (this.#instances.has(spec.id) || this.#launching.has(spec.id))
        throw new Error(`instance "${spec.id}" is already being started`);
    }
    this.#launching.add(spec.id);
    try {
      const image = this.#images.get(spec.image);
      const status = image ? await this.#startProcess(spec, image) : await this.#startPlaceholder(spec);
      return status;
    } finally {
      this.#launching.delete(spec.id);
    }
  }

  /** An image the config's `images` map does not name runs as a placeholder. */
  runsAsPlaceholder(image: string): boolean {
    return !this.#images.has(image);
  }

  /**
   * Any image, mapped or not: a placeholder pod's env is kept when a PATCH later points it at a
   * mapped image, and a template's env reaches every pod and worker made from it.
   */
  refusedEnv(env: Record<string, string>, image: string): EnvRefusal | null {
    return tenantEnvRefusal(env, this.#images.get(image)?.tenantEnv, this.#options.envScreen);
  }

  suspend = (id: string): Promise<void> => suspendProcess(this.#instances, this.#supervision, id);
  resume = (id: string): Promise<void> => resumeProcess(this.#instances, this.#supervision, id);

  /** A shell beside the instance's process (process-shell.ts). */
  shell(id: string, request: ShellRequest): Promise<ShellSession> {
    const instance = this.#instances.get(id);
    const proc = instance?.status.state === 'running' && !instance.stopping ? instance.proc : null;
    return openProcessShell(id, proc ? { pid: proc.pgid, exited: proc.exited } : null, request);
  }

  /**
   * The binding's host port on 127.0.0.1, where the instance's process listens (the pod HTTP
   * proxy's upstream). An instance another replica on this machine started (a load-balancing
   * worker): the host port that replica recorded, `options.hostPort`.
   */
  async connect(id: string, port: number, options: ConnectOptions): Promise<Duplex> {
    const instance = this.#instances.get(id);
    if (!instance && options.hostPort !== undefined)
      return dialTcp('127.0.0.1', options.hostPort, `port ${port} of instance "${id}"`, options);
    if (instance && !instance.proc) throw new Error(`instance "${id}" runs as a placeholder: nothing in it listens`);
    if (!instance?.proc || instance.stopping || instance.status.state !== 'running')
      throw new Error(`instance "${id}" is not running here`);
    const binding = instance.ports.find((p) => p.private === port);
    if (!binding) throw new Error(`port ${port} is not one of instance "${id}"'s ports`);
    return dialTcp('127.0.0.1', binding.public, `port ${port} of instance "${id}"`, options);
  }

  /** `discard`: its folder (`instances/<id>`: output.log, the default cwd) goes too; its persistent volume stays. */
  async stop(id: string, options: StopOptions = {}): Promise<void> {
    const instance = this.#instances.get(id);
    if (instance) {
      instance.stopping ??= terminateInstance(this.#supervision, instance)
        .finally(() => {
          if (this.#instances.get(id) === instance) this.#instances.delete(id);
        })
        .then(() => this.#output.finish());
      await instance.stopping;
    }
    if (options.discard) await rm(instanceDirOf(this.#options.dataDir, id), { recursive: true, force: true });
  }

  async inspect(id: string): Promise<InstanceStatus | null> {
    const instance = this.#instances.get(id);
    if (!instance) return null;
    return this.#snapshot(instance);
  }

  async list(): Promise<InstanceStatus[]> {
    return [...this.#instances.values()].map((i) => this.#snapshot(i));
  }

  onChange(listener: InstanceListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Stops every instance (see the class comment), then dismisses the watchdog. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#logs.close();
    await this.#sampler.close();
    this.#output.close();
    this.#sharedOutput.close();
    await Promise.allSettled([...this.#inFlight]);
    await Promise.all([...this.#instances.keys()].map((id) => this.stop(id)));
    await this.#watchdog.close();
  }

  /**
   * Its instances are its children, so none can be adopted: kills what a previous server left
   * behind (within the previous server's watchdog grace, or after a reboot) and answers none.
   */
  async attach(): Promise<AttachedInstance[]> {
    await this.reapOrphans();
    return [];
  }

  /** Stops it, then deletes its persistent volume (`pods/<id>`) and its folder (`instances/<id>`: output.log, the default cwd). */
  async remove(id: string): Promise<void> {
    const podFolder = podFolderOf(this.#options.dataDir, id);
    await this.stop(id);
    await rm(podFolder, { recursive: true, force: true });
    await rm(instanceDirOf(this.#options.dataDir, id), { recursive: true, force: true });
  }

  /** Deletes the volume's folder (`volumes/<id>`). */
  async removeVolume(volume: { kind: 'network'; volumeId: string }): Promise<void> {
    await rm(networkVolumeFolderOf(this.#options.dataDir, volume.volumeId), { recursive: true, force: true });
  }

  /**
   * Kills the process groups a previous server left behind (see orphans.ts), skipping instances
   * this runtime holds. Meant for server start; `start()` also reaps its own id's leftover.
   */
  async reapOrphans(): Promise<string[]> {
    const held = new Set([...this.#instances.keys(), ...this.#launching]);
    const killed = await reapOrphans(
      this.#options.dataDir,
      { graceMs: this.#options.stopGraceMs },
      (id) => !held.has(id),
    );
    if (killed.length > 0)
      this.#options.logger.warn({ instances: killed }, 'killed processes left behind by a previous server');
    return killed;
  }

  async #startPlaceholder(spec: InstanceSpec): Promise<InstanceStatus> {
    // A real process this id ran under a previous server and config is killed by `reapOrphans()`
    // when the server starts, so a placeholder start touches no file.
    const instance: Instance = {
      status: {
        id: spec.id,
        state: 'running',
        startedAt: this.#options.clock.now(),
        exitCode: null,
        reason: null,
        stats: ZERO_STATS,
      },
      proc: null,
      stopping: null,
      ports: spec.ports,
    };
    this.#instances.set(spec.id, instance);
    this.#emit(instance);
    return copyStatus(instance.status);
  }

  async #startProcess(spec: InstanceSpec, image: ImageSpec): Promise<InstanceStatus> {
    const { dataDir, logger, clock } = this.#options;
    await this.#watchdog.start();
    const { launched, argv, cwd, logPath, probe } = await spawnInstance(spec, image, {
      dataDir,
      logger,
      stopGraceMs: this.#options.stopGraceMs,
      maxLogBytes: this.#logs.maxLogBytes,
      ...(this.#options.envScreen !== undefined ? { envScreen: this.#options.envScreen } : {}),
    });
    const { child, pgid, logOffset, exit } = launched;
    this.#watchdog.guard(pgid, spec.id);

    const proc: LiveProcess = {
      child,
      pgid,
      logPath,
      logOffset,
      exited: exit.then(() => undefined),
      probe: null,
      killing: null,
      usage: new UsageMeter(pgid, spec, this.#options.usageClock),
    };
    const instance: Instance = {
      status: {
        id: spec.id,
        state: probe ? 'starting' : 'running',
        startedAt: clock.now(),
        exitCode: null,
        reason: null,
        stats: null,
      },
      proc,
      stopping: null,
      ports: spec.ports,
    };
    this.#instances.set(spec.id, instance);
    void exit.then((info) => onProcessExit(this.#supervision, spec.id, instance, info.code, info.signal));
    await writePidFile(dataDir, spec.id, pgid).catch((err: unknown) =>
      logger.warn({ err, instance: spec.id }, 'cannot write the pid file'),
    );

    if (this.#closed) {
      await this.stop(spec.id);
      throw new Error(`cannot start instance "${spec.id}": the runtime is shutting down`);
    }
    logger.info({ instance: spec.id, image: spec.image, pid: pgid, argv, cwd }, 'instance process started');
    this.#logs.watch();
    this.#sampler.wake();
    this.#output.watch();
    this.#emit(instance);
    if (probe && image.health) superviseHealth(this.#supervision, spec.id, instance, probe, image.health);
    return copyStatus(instance.status);
  }

  /** Its status with the shared sampler's last figures (never measured here: see interval-sampler.ts). */
  #snapshot(instance: Instance): InstanceStatus {
    const { status, proc } = instance;
    if (!proc) return copyStatus(status);
    if (!isLive(instance)) return { ...status, stats: null };
    const stats = proc.usage.latest;
    return { ...status, stats: stats && { ...stats } };
  }

  /** The processes of the instances alive now (looked at lazily, one at a time). */
  *#liveLogs(): Generator<LiveProcess> {
    for (const instance of this.#instances.values()) {
      const proc = instance.proc;
      if (!proc || !isLive(instance)) continue;
      yield proc;
    }
  }

  #emit(instance: Instance): void {
    for (const listener of [...this.#listeners]) {
      try {
        const result: unknown = listener(copyStatus(instance.status));
        if (result instanceof Promise) result.catch((err: unknown) => this.#listenerFailed(err));
      } catch (err) {
        this.#listenerFailed(err);
      }
    }
  }

  #listenerFailed(err: unknown): void {
    this.#options.logger.error({ err }, 'an instance listener threw; the runtime carries on');
  }
}
