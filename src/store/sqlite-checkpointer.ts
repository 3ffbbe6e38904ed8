import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Copies the SQLite write-ahead log back into the database file from a worker thread, on its own
 * connection, so the thread serving requests does not. Without it the connection that commits
 * runs every checkpoint itself: copying thousands of pages and two fsyncs, a stall of tens of
 * milliseconds in the middle of request handling every few tens of thousands of jobs.
 *
 * Checkpoints here are PASSIVE (they never wait for, nor block, the writer or readers). The
 * serving connection keeps its own automatic checkpoint as a backstop; by the time it runs, most
 * frames are already copied, so it is short, and it lets the log start over from the beginning.
 */
export interface CheckpointStats {
  /** Checkpoints run so far. */
  runs: number;
  /** Frames in the log, and frames copied to the database, as of the last checkpoint. */
  logFrames: number;
  checkpointedFrames: number;
  /** The last checkpoint's error, if it failed (it is tried again on the next beat). */
  lastError: string | null;
}

// Runs in the worker thread (eval'd as CommonJS, so it needs no file of its own in src/ or dist/).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
const beat = () => {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ log: r.log, checkpointed: r.checkpointed, error: null });
  } catch (err) {
    parentPort.postMessage({ log: 0, checkpointed: 0, error: String(err && err.message || err) });
  }
};
const timer = setInterval(beat, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  try { db.close(); } catch {}
  parentPort.close();
});
`;

const requireHere = createRequire(import.meta.url);

export class SqliteCheckpointer {
  readonly stats: CheckpointStats = { runs: 0, logFrames: 0, checkpointedFrames: 0, lastError: null };
  readonly #worker: Worker;
  #stopped: Promise<void> | null = null;
  #exited = false;

  /** @param intervalMs how often to checkpoint. @default 250 */
  constructor(path: string, intervalMs = 250) {
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path, intervalMs, module: requireHere.resolve('better-sqlite3') },
    });
    this.#worker.unref();
    this.#worker.once('exit', () => (this.#exited = true));
    this.#worker.on('message', (m: { log: number; checkpointed: number; error: string | null }) => {
      this.stats.runs++;
      this.stats.logFrames = m.log;
      this.stats.checkpointedFrames = m.checkpointed;
      this.stats.lastError = m.error;
    });
    // A failing checkpointer costs nothing but its work: the serving connection's own checkpoint still runs.
    this.#worker.on('error', (err) => (this.stats.lastError = err.message));
  }

  /** Stops the thread and closes its connection. */
  stop(): Promise<void> {
    this.#stopped ??= new Promise<void>((resolve) => {
      if (this.#exited) return resolve();
      this.#worker.ref(); // keep the process up until the thread has closed its connection
      this.#worker.once('exit', () => resolve());
      this.#worker.postMessage('stop');
      setTimeout(() => void this.#worker.terminate(), 2_000).unref();
    });
    return this.#stopped;
  }
}
