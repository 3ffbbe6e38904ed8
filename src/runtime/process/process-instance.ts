/**
 * The supervision of one instance process (process-runtime.ts holds the instances): its health
 * check, its exit, its termination, each a transition of the instance's status announced through
 * the runtime.
 */
import type { ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { HealthProbe } from '../../domain/image-spec.js';
import type { InstanceState, InstanceStatus } from '../runtime.js';
import { describeTarget, waitUntilHealthy, type ProbeTarget } from '../health-probe.js';
import { removePidFile } from './orphans.js';
import { readTail } from './output-log.js';
import { signalGroup, terminateGroup } from './process-group.js';
import type { ProcessRuntimeOptions } from './process-runtime-options.js';
import type { UsageMeter } from './usage-meter.js';
import type { Watchdog } from './watchdog.js';

/** A running instance process, as its supervision sees it. */
export interface LiveProcess {
  child: ChildProcess;
  /** = the child's pid: it leads its own group */
  pgid: number;
  logPath: string;
  /** where this run's output begins in output.log */
  logOffset: number;
  exited: Promise<void>;
  probe: AbortController | null;
  /** set when the runtime itself kills the group (failed health check) */
  killing: Promise<void> | null;
  usage: UsageMeter;
}

/** An instance the runtime holds: a process, or a placeholder (no process). */
export interface Instance {
  status: InstanceStatus;
  /** null for a placeholder */
  proc: LiveProcess | null;
  stopping: Promise<void> | null;
  /** the spec's port bindings: a process listens on the host port of each (it shares the host's network) */
  ports: ReadonlyArray<{ private: number; public: number }>;
}

/** What supervising an instance needs from the runtime that holds it. */
export interface Supervision {
  options: Pick<ProcessRuntimeOptions, 'dataDir' | 'logger' | 'stopGraceMs' | 'graceTimer' | 'probeTiming'>;
  watchdog: Pick<Watchdog, 'release'>;
  /** whether `instance` is still the one the runtime holds under `id` */
  current: (id: string, instance: Instance) => boolean;
  /** announces the instance's status to the runtime's listeners */
  emit: (instance: Instance) => void;
}

/** Probes its health until it passes (→ running) or times out (→ failed, its group killed). */
export function superviseHealth(
  supervision: Supervision,
  id: string,
  instance: Instance,
  target: ProbeTarget,
  health: HealthProbe,
): void {
  const proc = instance.proc!;
  const abort = new AbortController();
  proc.probe = abort;
  void waitUntilHealthy(target, {
    intervalMs: Math.max(10, health.intervalMs),
    timeoutMs: health.timeoutMs,
    signal: abort.signal,
    timing: supervision.options.probeTiming,
  }).then(async (result) => {
    if (!supervision.current(id, instance) || instance.status.state !== 'starting') return;
    if (result.ok) {
      instance.status = { ...instance.status, state: 'running' };
      supervision.emit(instance);
      return;
    }
    if (result.aborted) return;
    const tail = await readTail(proc.logPath, proc.logOffset);
    if (!supervision.current(id, instance) || stateOf(instance) !== 'starting') return;
    const reason = withOutput(
      `health check ${describeTarget(target)} did not pass within ${health.timeoutMs} ms (last attempt: ${result.lastError})`,
      tail,
    );
    instance.status = { ...instance.status, state: 'failed', reason, stats: null };
    // A failed instance must not keep running (and holding its port) until someone stops it.
    proc.killing = terminate(supervision, proc).catch(() => undefined);
    supervision.emit(instance);
  });
}

/** Its process ended: the group's leftovers killed, the state exited (or failed while starting) with the reason. */
export async function onProcessExit(
  supervision: Supervision,
  id: string,
  instance: Instance,
  code: number | null,
  signal: NodeJS.Signals | null,
): Promise<void> {
  const proc = instance.proc!;
  proc.probe?.abort();
  // Whatever the process forked must not outlive it (a daemonized helper would keep its port).
  // Members still alive keep the group id reserved, so this cannot reach a stranger's group.
  signalGroup(proc.pgid, 'SIGKILL');
  supervision.watchdog.release(proc.pgid);
  await removePidFile(supervision.options.dataDir, id).catch(() => undefined);
  if (instance.stopping || !supervision.current(id, instance)) return;
  const exitCode = code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
  if (instance.status.state === 'failed') {
    instance.status = { ...instance.status, exitCode };
    return;
  }
  const tail = exitCode !== 0 ? await readTail(proc.logPath, proc.logOffset) : '';
  // The health check may have failed the instance while the tail was read.
  if (instance.stopping || !supervision.current(id, instance) || stateOf(instance) === 'failed') return;
  const what = signal ? `killed by signal ${signal}` : `process exited with code ${code}`;
  const starting = instance.status.state === 'starting';
  instance.status = {
    ...instance.status,
    state: starting ? 'failed' : 'exited',
    exitCode,
    reason: withOutput(starting ? `${what} before its health check passed` : what, tail),
    stats: null,
  };
  supervision.options.logger.info({ instance: id, exitCode, signal }, 'instance process ended');
  supervision.emit(instance);
}

/** Stops its process: SIGTERM, SIGKILL after the grace, the leader reaped, the pid file removed. */
export async function terminateInstance(supervision: Supervision, instance: Instance): Promise<void> {
  const proc = instance.proc;
  if (!proc) return;
  proc.probe?.abort();
  if (!leaderGone(proc)) await terminate(supervision, proc);
  await proc.killing;
  // The group is gone; wait (bounded) for Node to have reaped the leader too.
  await Promise.race([proc.exited, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
  await removePidFile(supervision.options.dataDir, instance.status.id).catch(() => undefined);
}

function terminate(supervision: Supervision, proc: LiveProcess): Promise<void> {
  const { stopGraceMs, graceTimer } = supervision.options;
  return terminateGroup(proc.pgid, stopGraceMs, proc.exited, graceTimer);
}

/**
 * Whether Node has reaped the group's leader. From then on its pid — our group id — may be handed
 * to another process, so the group is not signalled again (its leftovers were killed at exit).
 */
const leaderGone = (proc: LiveProcess): boolean => proc.child.exitCode !== null || proc.child.signalCode !== null;

/** A status callers may keep or change without touching ours. */
export const copyStatus = (status: InstanceStatus): InstanceStatus => ({
  ...status,
  stats: status.stats && { ...status.stats },
});

/** Read through a function so TypeScript does not keep a narrowing across an await. */
const stateOf = (instance: Instance): InstanceState => instance.status.state;
/** Starting, running or suspended (stopped by SIGSTOP, process-suspend.ts): its processes are there. */
export const isLive = (instance: Instance): boolean =>
  instance.status.state === 'starting' || instance.status.state === 'running' || instance.status.state === 'suspended';

/** Appends the tail of the process's output to a reason, so the user sees why. */
const withOutput = (reason: string, tail: string): string => (tail ? `${reason}; last output:\n${tail}` : reason);
