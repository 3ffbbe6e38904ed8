// The worker of bench/cold-start.ts: the Node worker library with a handler that reports when it
// got its first job (wall clock, comparable across processes) and when its process started.
import { serve } from '../../src/worker/index.js';

serve(() => ({ takenAt: Date.now(), processStartedAt: Math.round(performance.timeOrigin), pid: process.pid }));
