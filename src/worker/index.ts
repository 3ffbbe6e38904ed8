/** The Node worker library: `import { serve } from 'gantry/worker'`. */
export {
  serve,
  type Handler,
  type JobContext,
  type ServeOptions,
  type WorkerHandle,
  type WorkerJob,
  type WorkerTimers,
} from './serve.js';
export { readWorkerEnv, WorkerEnvError, type WorkerEnv } from './worker-env.js';
