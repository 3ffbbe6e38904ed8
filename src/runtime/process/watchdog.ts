/**
 * The server's side of the process runtime's watchdog (watchdog-process.mjs says what the
 * watchdog does): one small Node process per ProcessRuntime, started with the first real process
 * instance, told over a pipe which process groups to stop should the server die without closing.
 *
 * Why one watchdog and not a supervisor per instance: one process whatever the number of
 * instances, and instances stay the server's direct children, so their exit codes and signals
 * are read as they are. Why a pipe: the kernel closes it when the server dies, however it dies, and
 * it needs nothing from the instance's code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

/** The watchdog's script: beside this module in src/ (tsx) and in dist/ (the build compiles .mjs files). */
export const WATCHDOG_SCRIPT = fileURLToPath(new URL('./watchdog-process.mjs', import.meta.url));

export interface WatchdogOptions {
  /** How long the server may be gone before its instances are stopped. */
  graceMs: number;
  /** SIGTERM → SIGKILL grace when it stops them. */
  stopGraceMs: number;
  /** The watchdog's stderr (what it did, and why). */
  logPath: string;
  logger: Logger;
}

/** How long `close()` waits for the watchdog to exit after its goodbye. */
const EXIT_WAIT_MS = 2_000;

export class Watchdog {
  readonly #options: WatchdogOptions;
  /** pgid → instance id: what the watchdog is told to guard, replayed to a new one if it had to start again. */
  readonly #guarded = new Map<number, string>();
  #child: ChildProcess | null = null;
  #starting: Promise<void> | null = null;
  #closed = false;

  constructor(options: WatchdogOptions) {
    this.#options = options;
  }

  /** The watchdog's pid while it runs (tests, diagnostics). */
  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  /**
   * Starts the watchdog unless it runs. Never rejects: without a watchdog, instances still run, and
   * the next server on the data dir still kills what this one leaves (orphans.ts); the failure is
   * logged and the next call tries again.
   */
  async start(): Promise<void> {
    if (this.#closed || this.#child) return;
    this.#starting ??= this.#spawn().finally(() => {
      this.#starting = null;
    });
    return this.#starting;
  }

  /** From now on, group `pgid` (instance `id`) is stopped should the server die. */
  guard(pgid: number, id: string): void {
    this.#guarded.set(pgid, id);
    this.#send({ guard: pgid, id });
  }

  /** Group `pgid` ended: forget it (its id may be handed to another process). */
  release(pgid: number): void {
    if (!this.#guarded.delete(pgid)) return;
    this.#send({ release: pgid });
  }

  /** Says goodbye (the runtime stopped its instances) and waits, briefly, for the watchdog to exit. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#starting;
    const child = this.#child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // Keep the server alive until the watchdog has read its goodbye.
    child.ref();
    this.#send({ bye: true });
    child.stdin?.end();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, EXIT_WAIT_MS)))]);
    clearTimeout(timer);
    child.unref();
  }

  async #spawn(): Promise<void> {
    const { logger, logPath, graceMs, stopGraceMs } = this.#options;
    if (!existsSync(WATCHDOG_SCRIPT)) {
      logger.error(
        { script: WATCHDOG_SCRIPT },
        'the process watchdog is missing from this installation: instances of a server killed without closing keep running until a server starts again on this data dir',
      );
      return;
    }
    let log: FileHandle | null = null;
    try {
      await mkdir(dirname(logPath), { recursive: true, mode: 0o700 });
      log = await open(logPath, 'a', 0o600);
    } catch (err) {
      logger.warn({ err, log: logPath }, 'cannot open the process watchdog’s log; it runs without one');
    }
    let child: ChildProcess;
    let started: Promise<Error | null>;
    try {
      child = spawn(process.execPath, [WATCHDOG_SCRIPT, JSON.stringify({ graceMs, stopGraceMs })], {
        // Its own session: a signal to the server's process group (Ctrl-C, a supervisor stopping
        // the server's group) does not end it; the server says goodbye when it closes.
        detached: true,
        stdio: ['pipe', 'ignore', log?.fd ?? 'ignore'],
        // Nothing of the server's environment (NODE_OPTIONS would load the server's loaders and flags).
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        cwd: '/',
      });
      // 'spawn' and 'error' come on a later tick: listen before the first await.
      started = new Promise<Error | null>((resolve) => {
        child.once('spawn', () => resolve(null));
        child.once('error', resolve);
      });
    } catch (err) {
      logger.error({ err }, 'cannot start the process watchdog');
      return;
    } finally {
      // spawn() forked synchronously: the child holds its own copy of the descriptor already.
      await log?.close();
    }
    const error = await started;
    if (error) {
      logger.error({ err: error }, 'cannot start the process watchdog');
      return;
    }
    // A write to a watchdog that died answers EPIPE: its exit is what matters, and is logged below.
    child.stdin?.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      if (this.#child === child) this.#child = null;
      if (!this.#closed)
        logger.error(
          { code, signal, log: logPath },
          'the process watchdog ended on its own; it is started again with the next instance',
        );
    });
    // Neither it nor its pipe keeps the server running.
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.#child = child;
    for (const [pgid, id] of this.#guarded) this.#send({ guard: pgid, id });
    logger.debug({ pid: child.pid, graceMs }, 'process watchdog started');
  }

  #send(message: object): void {
    const stdin = this.#child?.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded) return;
    stdin.write(`${JSON.stringify(message)}\n`);
  }
}
