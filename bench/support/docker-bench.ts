// What the Docker benchmarks share: a stand-in nvidia-smi and the Node worker image they launch.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DockerClient } from '../../src/runtime/docker/docker-client.js';
import { buildImage } from '../../test/support/docker-images.js';

const root = join(import.meta.dirname, '..', '..');

/** A stand-in nvidia-smi reporting `count` RTX 4090s and CUDA 12.4 (the one seam no real thing fills here). */
export function standInNvidiaSmi(dir: string, count: number): string {
  const csv = Array.from(
    { length: count },
    (_, i) => `${i}, GPU-6f1c2a57-3b1e-4c3d-9a41-${i.toString(16).padStart(12, '0')}, NVIDIA GeForce RTX 4090, 24564`,
  ).join('\n');
  const path = join(dir, 'nvidia-smi');
  writeFileSync(
    path,
    `#!/bin/sh\ncase "$1" in\n  --query-gpu=*) cat <<'CSV'\n${csv}\nCSV\n;;\n  *) echo '| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |';;\nesac\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

/** What the bench worker's handler answers: when it took the job, when its process started, when it was ready. */
export interface WorkerTimes {
  takenAt: number;
  processStartedAt: number;
  readyAt: number;
}

/**
 * The bench worker image: this machine's node, Gantry's worker library (dist/worker) and a handler
 * answering `WorkerTimes`. `START_DELAY_MS` in its environment makes it wait that long before it
 * asks for work (a model load's stand-in). Files are written to `scratch`.
 */
export async function buildWorkerImage(client: DockerClient, scratch: string, name = 'bench-worker'): Promise<string> {
  writeFileSync(join(scratch, 'package.json'), '{"type":"module"}\n');
  writeFileSync(
    join(scratch, 'handler.js'),
    [
      "import { serve } from './worker/index.js';",
      'const delay = Number(process.env.START_DELAY_MS || 0);',
      'if (delay > 0) await new Promise((r) => setTimeout(r, delay));',
      'const readyAt = Date.now();',
      'serve(async (job) => ({ echo: job.input, takenAt: Date.now(), processStartedAt: Math.round(performance.timeOrigin), readyAt }));',
      '',
    ].join('\n'),
  );
  const workerFiles = ['index.js', 'serve.js', 'http-call.js', 'worker-env.js'].map((f) => ({
    from: join(root, 'dist', 'worker', f),
    to: `/app/worker/${f}`,
  }));
  return buildImage(client, {
    name,
    node: true,
    files: [
      ...workerFiles,
      { from: join(scratch, 'package.json'), to: '/app/package.json' },
      { from: join(scratch, 'handler.js'), to: '/app/handler.js' },
    ],
    changes: ['ENTRYPOINT ["/usr/local/bin/node", "/app/handler.js"]'],
  });
}
