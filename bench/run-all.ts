// Runs every benchmark in turn (each is also runnable alone): node --import tsx bench/run-all.ts
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const benches = [
  'placement.ts',
  'http.ts',
  'memory.ts',
  'jobs-store.ts',
  'jobs-take.ts',
  'jobs-http.ts',
  'runsync-latency.ts',
  'cold-start.ts',
  'queue-1m.ts',
  'docker.ts',
  'fleet.ts',
  'fleet-ops.ts',
];
let failed = 0;
for (const name of benches) {
  console.log(`\n=== bench/${name}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, name)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
