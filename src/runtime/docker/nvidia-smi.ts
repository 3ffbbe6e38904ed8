/**
 * The host's NVIDIA GPUs, as `nvidia-smi` reports them.
 *
 * Two calls: `--query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits` lists the
 * GPUs, and the plain `nvidia-smi` banner gives the CUDA version the driver supports. The CUDA
 * version is not a `--query-gpu` field (`driver_version` is the driver's own version, `compute_cap`
 * the GPU's architecture, neither a CUDA version): nvidia-smi prints it only in its banner
 * (`CUDA Version: 12.4`; `CUDA UMD Version: 13.3` from driver 610) and in `-q`. The banner is the
 * shorter of the two to produce; both spellings are read.
 */
import { execFile } from 'node:child_process';

export interface NvidiaGpu {
  /** nvidia-smi's index */
  index: number;
  uuid: string;
  /** e.g. `NVIDIA GeForce RTX 4090` */
  name: string;
  /** MiB; null when nvidia-smi reports none (`[N/A]`) */
  memoryMiB: number | null;
}

export type NvidiaSmiResult =
  /** The command is not there: a host without NVIDIA GPUs (or without their driver). */
  | { kind: 'absent'; command: string }
  /** The command ran and failed, or printed what cannot be read; `message` says what it printed. */
  | { kind: 'failed'; command: string; message: string }
  | {
      kind: 'ok';
      command: string;
      gpus: NvidiaGpu[];
      /** major.minor, null when the banner has none */ cudaVersion: string | null;
    };

const GPU_QUERY = ['--query-gpu=index,uuid,name,memory.total', '--format=csv,noheader,nounits'];

interface Run {
  stdout: string;
  stderr: string;
  /** null when it ran and exited 0 */
  error: (NodeJS.ErrnoException & { killed?: boolean; code?: string | number; signal?: string | null }) | null;
}

function run(command: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { timeout: timeoutMs, env, maxBuffer: 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) =>
        resolve({ stdout: String(stdout), stderr: String(stderr), error: error as Run['error'] }),
    );
  });
}

const firstLine = (text: string): string => text.trim().split('\n')[0]?.trim().slice(0, 300) ?? '';

/** Reads the `--query-gpu` CSV; throws naming the first line it cannot read. */
export function parseGpuCsv(csv: string): NvidiaGpu[] {
  const gpus: NvidiaGpu[] = [];
  for (const raw of csv.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const fields = line.split(',').map((f) => f.trim());
    // index, uuid, name, memory.total; a name with a comma in it keeps its middle fields.
    const [index, uuid] = fields;
    const memory = fields.at(-1) ?? '';
    const name = fields.slice(2, -1).join(', ');
    if (
      fields.length < 4 ||
      !/^\d+$/.test(index ?? '') ||
      !/^(GPU|MIG)-[0-9A-Za-z-]+$/.test(uuid ?? '') ||
      name === '' ||
      !/^(\d+(\.\d+)?|\[N\/A\])$/.test(memory)
    )
      throw new Error(
        `printed a line gantry cannot read as "index, uuid, name, memory.total": "${line.slice(0, 200)}"`,
      );
    gpus.push({ index: Number(index), uuid: uuid!, name, memoryMiB: memory === '[N/A]' ? null : Number(memory) });
  }
  return gpus.sort((a, b) => a.index - b.index);
}

/** The CUDA version in nvidia-smi's banner (`CUDA Version: 12.4`, or `CUDA UMD Version: 13.3`), major.minor. */
export function parseCudaVersion(banner: string): string | null {
  const m = /CUDA(?:\s+UMD)?\s+Version\s*:\s*(\d+)\.(\d+)/i.exec(banner);
  return m ? `${Number(m[1])}.${Number(m[2])}` : null;
}

/**
 * Runs `command` (a path, or a name looked up on `env.PATH`) and answers the GPUs it lists.
 * @param options.timeoutMs each call's limit @default 10000
 * @param options.env the environment it runs in (its PATH finds the command) @default process.env
 */
export async function queryNvidiaSmi(
  command: string,
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<NvidiaSmiResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const env = options.env ?? process.env;
  const query = await run(command, GPU_QUERY, timeoutMs, env);
  if (query.error?.code === 'ENOENT') return { kind: 'absent', command };
  // A driver with no GPUs to show exits non-zero saying so: that is a host without GPUs, not a failure.
  if (/No devices were found/i.test(query.stdout + query.stderr))
    return { kind: 'ok', command, gpus: [], cudaVersion: null };
  if (query.error) {
    const why = query.error.killed
      ? `did not finish within ${timeoutMs} ms`
      : `failed (${query.error.code ?? query.error.signal ?? 'error'})`;
    const said = firstLine(query.stderr) || firstLine(query.stdout);
    return { kind: 'failed', command, message: `${command} ${why}${said ? `: ${said}` : ''}` };
  }
  let gpus: NvidiaGpu[];
  try {
    gpus = parseGpuCsv(query.stdout);
  } catch (err) {
    return { kind: 'failed', command, message: `${command} ${(err as Error).message}` };
  }
  if (gpus.length === 0) return { kind: 'ok', command, gpus, cudaVersion: null };
  const banner = await run(command, [], timeoutMs, env);
  return { kind: 'ok', command, gpus, cudaVersion: banner.error ? null : parseCudaVersion(banner.stdout) };
}
