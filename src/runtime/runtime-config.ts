/**
 * The config's `runtime` section: which runtime runs instances, the keys every runtime reads, and
 * each runtime's own section, declared in its folder (`process/config.ts`, `docker/config.ts`) and
 * by its module (`configSection`). config-schema.ts places it in the config file; config-runtime.ts
 * checks it against the rest and computes what is left (`RuntimeConfig`).
 */
import { Type, type StaticDecode } from '@sinclair/typebox';
import { amount, choice } from '../config-fields.js';
import { DockerRuntimeSchema, type DockerRuntimeConfig } from './docker/config.js';
import { ProcessRuntimeSchema } from './process/config.js';

export const RuntimeSchema = Type.Object(
  {
    kind: choice(
      ['process', 'docker', 'fleet'],
      'process',
      'Which runtime runs pods and workers: `process` (local child processes, the demo fleet), `docker` (containers on a Docker Engine, on the one host discovered from it) or `fleet` (containers on the hosts whose `gantry agent` joined: docs/fleet.md).',
      { env: 'GANTRY_RUNTIME' },
    ),
    process: ProcessRuntimeSchema,
    docker: DockerRuntimeSchema,
    orphanGraceMs: amount(
      60_000,
      'How long an instance the runtime found at server start may stay unclaimed by a pod or a launched worker before it is removed as an orphan.',
      { env: 'GANTRY_RUNTIME_ORPHAN_GRACE_MS' },
    ),
    statsIntervalMs: amount(
      5000,
      "How often the runtime's one shared sampler measures its live instances' utilisation (CPU, memory, GPUs: docs/utilization.md); pods show the last sample.",
      {
        minimum: 100,
        bounds: 'at least 100 (ms): each turn reads every live instance',
        env: 'GANTRY_RUNTIME_STATS_INTERVAL_MS',
      },
    ),
  },
  { description: 'How instances run. `runtime: docker` is the short form of `runtime: { kind: docker }`.' },
);

/** The `runtime` section as decoded, before config-runtime.ts computes what the file leaves out. */
export type RuntimeSection = StaticDecode<typeof RuntimeSchema>;

/** How instances run (each key: docs/configuration.md). */
export type RuntimeConfig = Omit<RuntimeSection, 'docker'> & { docker: DockerRuntimeConfig };
