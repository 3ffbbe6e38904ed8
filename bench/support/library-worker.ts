// A worker of bench/runsync-latency.ts's deployed shape: Gantry's Node worker library (`serve()`,
// concurrency 1), launched by the autoscaler through the process runtime. Echoes `input.i`, its CPU
// time so far (`cpuUs`) and `at`: when the handler got the job (performance.timeOrigin + now(),
// comparable across processes).
import { serve } from '../../src/worker/index.js';

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
serve((job) => ({
  echoed: (job.input as { i: number }).i,
  at: performance.timeOrigin + performance.now(),
  cpuUs: cpu(),
}));
