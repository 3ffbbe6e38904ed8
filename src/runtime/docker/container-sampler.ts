/**
 * The Docker runtime's shared sampler (interval-sampler.ts): each turn it reads every live
 * container's figures from the engine and, on a host whose GPUs nvidia-smi discovered, runs
 * nvidia-smi once for all of them; it keeps them on the instance's status, which `inspect()` and
 * `list()` answer as they are (a GET never reaches the engine). An agent's Docker runtime samples
 * the same way, so the statuses it reports carry the same figures.
 *
 * - CPU: `cpu_stats.cpu_usage.total_usage` (ns of CPU time) between this turn's reading and the
 *   last, over the time between them (the engine's `read` stamps), against the container's CPU
 *   limit (`NanoCpus`, the instance's vCPUs), else the CPUs it sees. 100 = every vCPU busy.
 * - Memory: `memory_stats.usage` less the page cache the kernel can drop (`inactive_file`, as
 *   `docker stats` counts it), against the container's memory limit, which Gantry sets to the
 *   instance's `memoryGb` allotment; a container without a limit is measured against what the
 *   engine reports as its limit (the host's memory).
 * - GPUs: from `nvidia-smi` (gpu-utilization.ts), for the GPUs the container was given (its
 *   `NVIDIA_VISIBLE_DEVICES`, which the platform sets, mapped back to host indices). A host without
 *   discovered GPU UUIDs (no GPUs, or GPUs only declared) runs no nvidia-smi and reports none.
 *
 * - Disk, where the storage driver cannot cap a container's writable layer (the container carries
 *   the `gantry.disk` label, its `diskGb` in bytes): each turn the engine is asked the layer's size
 *   (`GET /containers/{id}/json?size=true`, `SizeRw`), and a container past its disk is reported
 *   to `onDiskExceeded` (the runtime stops it, saying why).
 *
 * A container's limits and GPUs are read once (one inspect) and kept while it lives.
 */
import type { Logger } from 'pino';
import type { Host } from '../../domain/catalog.js';
import { IntervalSampler, type SamplerTimers } from '../interval-sampler.js';
import type { InstanceStats } from '../runtime.js';
import type { DockerClient } from './docker-client.js';
import { LABEL } from './docker-names.js';
import type { ContainerStats } from './engine-types.js';
import { gpuFiguresOf, readGpuUtilization, type GpuReading } from './gpu-utilization.js';
import type { Live, LiveInstances } from './live-instances.js';
import { StartSlots } from './start-slots.js';

export interface ContainerSamplerOptions {
  client: Pick<DockerClient, 'containerStats' | 'inspectContainer'>;
  live: LiveInstances;
  host: Pick<Host, 'gpuUuids'>;
  logger: Logger;
  /** Config `runtime.statsIntervalMs`. @default 5000 */
  intervalMs?: number;
  timers?: SamplerTimers;
  /** Engine stats calls under way at once. @default 8 */
  concurrency?: number;
  /** The nvidia-smi command. @default 'nvidia-smi' */
  nvidiaSmi?: string;
  /** The environment nvidia-smi runs in. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** A container wrote more to its writable layer than its disk, which its storage driver cannot cap. @default ignored */
  onDiskExceeded?: (live: Live, usedBytes: number, limitBytes: number) => void;
}

/** What a container was given, read once from its inspect. */
interface Allotment {
  vcpus: number | null;
  memoryLimitBytes: number;
  gpuIndices: number[];
  /** its disk in bytes where the storage driver cannot cap it (the `gantry.disk` label); null: none to watch */
  diskLimitBytes: number | null;
}

interface CpuReading {
  totalNs: number;
  atMs: number;
}

const percent = (n: number): number => Math.round(Math.min(100, Math.max(0, n)) * 10) / 10;

const sampled = (live: Live): boolean =>
  live.launched &&
  !live.stopping &&
  (live.status.state === 'running' || live.status.state === 'starting' || live.status.state === 'suspended');

export class ContainerSampler {
  readonly #o: ContainerSamplerOptions;
  readonly #loop: IntervalSampler;
  readonly #slots: StartSlots;
  readonly #allotments = new Map<string, Allotment>();
  readonly #cpu = new Map<string, CpuReading>();
  #gpuFailure: string | null = null;

  constructor(options: ContainerSamplerOptions) {
    this.#o = options;
    this.#slots = new StartSlots(options.concurrency ?? 8);
    this.#loop = new IntervalSampler({
      ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
      ...(options.timers ? { timers: options.timers } : {}),
      logger: options.logger,
      live: () => options.live.all().some(sampled),
      sample: () => this.#sample(),
    });
    // Any change (a start, an adoption's first emit, a return from an outage) may be something to sample.
    options.live.onChange(() => this.wake());
  }

  /** Turns taken so far (for tests and diagnostics). */
  get samples(): number {
    return this.#loop.samples;
  }

  get running(): boolean {
    return this.#loop.running;
  }

  wake(): void {
    this.#loop.wake();
  }

  close(): Promise<void> {
    return this.#loop.close();
  }

  async #sample(): Promise<void> {
    const lives = this.#o.live.all().filter(sampled);
    const present = new Set(lives.map((l) => l.containerId));
    for (const id of this.#allotments.keys()) if (!present.has(id)) this.#allotments.delete(id);
    for (const id of this.#cpu.keys()) if (!present.has(id)) this.#cpu.delete(id);

    const allotments = await Promise.all(lives.map((live) => this.#slots.run(() => this.#allotmentOf(live))));
    const wantsGpus = allotments.some((a) => a !== null && a.gpuIndices.length > 0);
    const gpuReadings = wantsGpus ? await this.#readGpus() : null;
    await Promise.all(
      lives.map((live, i) =>
        this.#slots.run(async () => {
          const allotment = allotments[i];
          if (!allotment) return;
          const stats = await this.#o.client.containerStats(live.containerId).catch((err: unknown) => {
            this.#o.logger.debug({ err, instance: live.id }, 'cannot read the stats of a container');
            return null;
          });
          if (!stats || !this.#o.live.current(live) || !sampled(live)) return;
          const figures = this.#figures(live.containerId, stats, allotment, gpuReadings);
          live.status = { ...live.status, stats: figures };
          if (allotment.diskLimitBytes !== null) await this.#checkDisk(live, allotment.diskLimitBytes);
        }),
      ),
    );
  }

  /** The container's limits and GPUs, inspected once. */
  async #allotmentOf(live: Live): Promise<Allotment | null> {
    const known = this.#allotments.get(live.containerId);
    if (known) return known;
    const info = await this.#o.client.inspectContainer(live.containerId).catch(() => null);
    if (!info) return null;
    const nano = info.HostConfig.NanoCpus ?? 0;
    const disk = Number(info.Config.Labels?.[LABEL.disk]);
    const allotment: Allotment = {
      vcpus: nano > 0 ? nano / 1e9 : null,
      memoryLimitBytes: info.HostConfig.Memory ?? 0,
      gpuIndices: gpuIndicesOf(info.Config.Env ?? [], this.#o.host.gpuUuids ?? []),
      diskLimitBytes: Number.isFinite(disk) && disk > 0 ? disk : null,
    };
    this.#allotments.set(live.containerId, allotment);
    return allotment;
  }

  /** Asks the engine the size of the container's writable layer; past `limitBytes`, reports it. */
  async #checkDisk(live: Live, limitBytes: number): Promise<void> {
    const sized = await this.#o.client.inspectContainer(live.containerId, { size: true }).catch((err: unknown) => {
      this.#o.logger.debug({ err, instance: live.id }, 'cannot read the disk use of a container');
      return null;
    });
    const used = sized?.SizeRw ?? 0;
    if (used > limitBytes && this.#o.live.current(live) && sampled(live))
      this.#o.onDiskExceeded?.(live, used, limitBytes);
  }

  /** One nvidia-smi call for the host, or null (no real GPUs, or it failed: logged once per failure spell). */
  async #readGpus(): Promise<GpuReading[] | null> {
    if ((this.#o.host.gpuUuids ?? []).length === 0) return null;
    try {
      const readings = await readGpuUtilization(
        this.#o.nvidiaSmi ?? 'nvidia-smi',
        this.#o.env ? { env: this.#o.env } : {},
      );
      this.#gpuFailure = null;
      return readings;
    } catch (err) {
      const message = (err as Error).message;
      if (this.#gpuFailure !== message)
        this.#o.logger.warn({ err }, 'cannot read GPU utilisation; pods report no GPU figures until it answers');
      this.#gpuFailure = message;
      return null;
    }
  }

  #figures(containerId: string, stats: ContainerStats, allotment: Allotment, gpus: GpuReading[] | null): InstanceStats {
    const totalNs = stats.cpu_stats?.cpu_usage?.total_usage ?? 0;
    const read = Date.parse(stats.read);
    const atMs = Number.isFinite(read) && read > 0 ? read : Date.now();
    const previous = this.#cpu.get(containerId);
    this.#cpu.set(containerId, { totalNs, atMs });
    const vcpus = allotment.vcpus ?? stats.cpu_stats?.online_cpus ?? 1;
    // The first reading has nothing to compare with; a counter that went back is a restarted container.
    const cpuUtil =
      previous && atMs > previous.atMs && totalNs >= previous.totalNs
        ? percent(((totalNs - previous.totalNs) / 1e6 / (atMs - previous.atMs) / Math.max(vcpus, 0.01)) * 100)
        : 0;
    const memory = stats.memory_stats ?? {};
    const cache = memory.stats?.inactive_file ?? memory.stats?.total_inactive_file ?? 0;
    const memoryBytes = Math.max(0, (memory.usage ?? 0) - cache);
    const limit = allotment.memoryLimitBytes > 0 ? allotment.memoryLimitBytes : (memory.limit ?? 0);
    const figures: InstanceStats = {
      cpuUtil,
      memoryUtil: limit > 0 ? percent((memoryBytes / limit) * 100) : 0,
      memoryBytes,
    };
    if (gpus && allotment.gpuIndices.length > 0) {
      const mine = gpuFiguresOf(allotment.gpuIndices, this.#o.host.gpuUuids ?? [], gpus);
      if (mine) figures.gpus = mine;
    }
    return figures;
  }
}

/**
 * The host GPU indices a container was given, from the `NVIDIA_VISIBLE_DEVICES` the platform set
 * on it (instance-env.ts: UUIDs where discovery found them, else indices; `none` for a CPU instance).
 */
export function gpuIndicesOf(env: readonly string[], uuids: readonly string[]): number[] {
  const entry = env.findLast((e) => e.startsWith('NVIDIA_VISIBLE_DEVICES='));
  if (!entry) return [];
  const out: number[] = [];
  for (const device of entry.slice('NVIDIA_VISIBLE_DEVICES='.length).split(',')) {
    const name = device.trim();
    const byUuid = uuids.indexOf(name);
    if (byUuid >= 0) out.push(byUuid);
    else if (/^\d+$/.test(name) && Number(name) < uuids.length) out.push(Number(name));
  }
  return out;
}
