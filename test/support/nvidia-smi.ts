/**
 * A stand-in `nvidia-smi` first on PATH: the one seam where no real thing can run on a host
 * without NVIDIA GPUs. It prints what the real one prints for discovery's two calls and for the
 * utilisation sampler's query, and notes every call's arguments in `calls` (one line each).
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dirs: string[] = [];

/** Removes every stand-in made so far (call it from `after`). */
export function removeStandIns(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * A directory holding an `nvidia-smi` script: `csv` answers discovery's `--query-gpu` (exiting
 * `exit`), `utilization` the sampler's `--query-gpu=index,uuid,utilization.gpu,…` (as the file
 * `utilization.csv` in `dir`, which a test may rewrite between samples), `banner` the plain call;
 * `body` replaces the whole script. `env` has the directory first on PATH; `calls()` answers the
 * argument lines of the calls made so far.
 */
export function standInNvidiaSmi(script: {
  csv?: string;
  banner?: string;
  exit?: number;
  body?: string;
  utilization?: string;
}): {
  env: NodeJS.ProcessEnv;
  dir: string;
  path: string;
  calls(): string[];
  setUtilization(csv: string): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-nvsmi-'));
  dirs.push(dir);
  const callLog = join(dir, 'calls.log');
  const utilization = join(dir, 'utilization.csv');
  writeFileSync(utilization, `${script.utilization ?? ''}\n`);
  const body =
    script.body ??
    `echo "$*" >> '${callLog}'
case "$1" in
  --query-gpu=index,uuid,utilization.gpu,*) cat '${utilization}';;
  --query-gpu=*) cat <<'CSV'
${script.csv ?? ''}
CSV
  exit ${script.exit ?? 0};;
  *) cat <<'BANNER'
${script.banner ?? ''}
BANNER
  ;;
esac`;
  const path = join(dir, 'nvidia-smi');
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return {
    dir,
    path,
    env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` },
    calls: () =>
      existsSync(callLog)
        ? readFileSync(callLog, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
        : [],
    setUtilization: (csv) => writeFileSync(utilization, `${csv}\n`),
  };
}

export const BANNER_12_4 = `Tue Nov 23 18:09:47 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+`;

export const TWO_4090 = `0, GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b01, NVIDIA GeForce RTX 4090, 24564
1, GPU-6f1c2a57-3b1e-4c3d-9a41-0c3a5e1f7b02, NVIDIA GeForce RTX 4090, 24564`;
