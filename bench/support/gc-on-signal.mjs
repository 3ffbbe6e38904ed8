// Preloaded into a benchmark's server (`--expose-gc --import <this file>`): on SIGUSR2 it runs a
// full garbage collection and prints the V8 heap after it (in use, committed, the young
// generation's committed share), so a memory figure is read with the garbage out of it rather
// than at whatever point the last GC happened to leave, and RSS can be told from the heap.
import { getHeapSpaceStatistics } from 'node:v8';

process.on('SIGUSR2', () => {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  const young = getHeapSpaceStatistics()
    .filter((s) => s.space_name === 'new_space' || s.space_name === 'new_large_object_space')
    .reduce((sum, s) => sum + s.space_size, 0);
  process.stdout.write(
    `bench-gc heapUsed=${m.heapUsed} heapTotal=${m.heapTotal} young=${young} external=${m.external}\n`,
  );
});
