/**
 * What each GPU of the host is doing, as `nvidia-smi` reports it: one call per sampler turn for
 * the whole host (`--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total`), whatever
 * the number of instances.
 */
import { execFile } from 'node:child_process';

const GPU_UTILIZATION_QUERY = [
  '--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total',
  '--format=csv,noheader,nounits',
];

export interface GpuReading {
  index: number;
  uuid: string;
  /** percent of the time a kernel ran over the driver's last sample period; null: `[N/A]` (e.g. a MIG slice) */
  util: number | null;
  /** MiB; null: `[N/A]` */
  memoryUsedMiB: number | null;
  memoryTotalMiB: number | null;
}

const figure = (text: string): number | null | undefined =>
  text === '[N/A]' || text === '[Not Supported]' ? null : /^\d+(\.\d+)?$/.test(text) ? Number(text) : undefined;

/** Reads the utilization CSV; throws naming the first line it cannot read. */
export function parseGpuUtilization(csv: string): GpuReading[] {
  const readings: GpuReading[] = [];
  for (const raw of csv.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const [index, uuid, util, used, total, ...rest] = line.split(',').map((f) => f.trim());
    const figures = [util, used, total].map((f) => figure(f ?? ''));
    if (
      rest.length > 0 ||
      !/^\d+$/.test(index ?? '') ||
      !/^(GPU|MIG)-[0-9A-Za-z-]+$/.test(uuid ?? '') ||
      figures.some((f) => f === undefined)
    )
      throw new Error(
        `printed a line gantry cannot read as "index, uuid, utilization.gpu, memory.used, memory.total": "${line.slice(0, 200)}"`,
      );
    const [u, m, t] = figures as Array<number | null>;
    readings.push({
      index: Number(index),
      uuid: uuid!,
      util: u ?? null,
      memoryUsedMiB: m ?? null,
      memoryTotalMiB: t ?? null,
    });
  }
  return readings;
}

/**
 * Runs the query once. Rejects with what went wrong (the command missing, failing, or printing
 * what cannot be read): the sampler then reports no GPU figures rather than invented ones.
 * @param options.timeoutMs @default 5000
 * @param options.env the environment it runs in (its PATH finds the command) @default process.env
 */
export function readGpuUtilization(
  command: string,
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<GpuReading[]> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  return new Promise((resolve, reject) => {
    execFile(
      command,
      GPU_UTILIZATION_QUERY,
      { timeout: timeoutMs, env: options.env ?? process.env, maxBuffer: 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => {
        if (error) {
          const said = String(stderr).trim().split('\n')[0] || String(stdout).trim().split('\n')[0] || '';
          reject(
            new Error(
              `${command} ${error.killed ? `did not finish within ${timeoutMs} ms` : `failed (${error.code ?? error.signal ?? 'error'})`}${said ? `: ${said.slice(0, 300)}` : ''}`,
            ),
          );
          return;
        }
        try {
          resolve(parseGpuUtilization(String(stdout)));
        } catch (err) {
          reject(new Error(`${command} ${(err as Error).message}`));
        }
      },
    );
  });
}

/** Percent with one decimal, 0–100. */
const percent = (n: number): number => Math.round(Math.min(100, Math.max(0, n)) * 10) / 10;

/**
 * The figures of an instance's GPUs, in the order of its indices: each found by its UUID (the
 * host's `gpuUuids[index]`), else by index. Undefined when any of them has no reading: a partial
 * list would shift the others' positions, and a missing figure is never made up.
 */
export function gpuFiguresOf(
  indices: readonly number[],
  uuids: readonly string[],
  readings: readonly GpuReading[],
): Array<{ id: string; util: number; memoryUtil: number }> | undefined {
  const out: Array<{ id: string; util: number; memoryUtil: number }> = [];
  for (const index of indices) {
    const uuid = uuids[index];
    const r =
      (uuid !== undefined ? readings.find((g) => g.uuid === uuid) : undefined) ??
      readings.find((g) => g.index === index);
    if (!r || r.util === null || r.memoryUsedMiB === null || !r.memoryTotalMiB) return undefined;
    out.push({ id: r.uuid, util: percent(r.util), memoryUtil: percent((r.memoryUsedMiB / r.memoryTotalMiB) * 100) });
  }
  return out;
}
