// Preloaded into a benchmark's server (`--expose-gc --import <this file>`): on SIGUSR2 it runs a
// full garbage collection and prints the V8 heap in use after it, so a memory figure is read
// with the garbage out of it rather than at whatever point the last GC happened to leave.
process.on('SIGUSR2', () => {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  process.stdout.write(`bench-gc heapUsed=${m.heapUsed} external=${m.external} arrayBuffers=${m.arrayBuffers}\n`);
});
