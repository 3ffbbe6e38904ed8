/**
 * Suspending and resuming a process instance (the runtime port's `suspend`/`resume`, FlashBoot):
 * SIGSTOP to its whole process group freezes every process in it where it is (no CPU; its memory,
 * open files and listening sockets kept: a connection to its port is accepted by the kernel and
 * waits), SIGCONT continues it. A process that left the group on purpose (setsid) is not reached,
 * as with a stop. A placeholder (no process) just changes state.
 *
 * Stopped processes stay live for the rest of the runtime: /proc shows them (state `T`, not a
 * zombie), the usage meter reads no CPU, and a stop sends SIGCONT after SIGTERM
 * (process-group.ts) so the grace is not spent on a process that cannot see its SIGTERM.
 */
import { signalGroup } from './process-group.js';
import type { Instance, Supervision } from './process-instance.js';

/** The instances the runtime holds, by id. */
type Instances = ReadonlyMap<string, Instance>;

/** SIGSTOP to a running instance's group (`suspended`); a suspended one is left as it is. */
export async function suspendProcess(instances: Instances, s: Supervision, id: string): Promise<void> {
  const instance = held(instances, id, 'suspend');
  const { state } = instance.status;
  if (state === 'suspended') return;
  if (state !== 'running') throw new Error(`instance "${id}" is ${state}: only a running instance can be suspended`);
  signal(instance, id, 'SIGSTOP');
  settle(s, instance, 'suspended');
}

/** SIGCONT to a suspended instance's group (`running` again); a running one is left as it is. */
export async function resumeProcess(instances: Instances, s: Supervision, id: string): Promise<void> {
  const instance = held(instances, id, 'resume');
  const { state } = instance.status;
  if (state === 'running') return;
  if (state !== 'suspended') throw new Error(`instance "${id}" is ${state}: only a suspended instance can be resumed`);
  signal(instance, id, 'SIGCONT');
  settle(s, instance, 'running');
}

function held(instances: Instances, id: string, what: string): Instance {
  const instance = instances.get(id);
  if (!instance) throw new Error(`cannot ${what} instance "${id}": it does not run here`);
  if (instance.stopping) throw new Error(`cannot ${what} instance "${id}": it is being stopped`);
  return instance;
}

function signal(instance: Instance, id: string, sig: 'SIGSTOP' | 'SIGCONT'): void {
  const proc = instance.proc;
  if (!proc) return;
  // Once Node reaped the leader its pid (the group id) may be another's: never signalled again.
  const ended = proc.child.exitCode !== null || proc.child.signalCode !== null;
  if (ended || !signalGroup(proc.pgid, sig)) throw new Error(`instance "${id}" has ended: its process is gone`);
}

function settle(s: Supervision, instance: Instance, state: 'suspended' | 'running'): void {
  instance.status = { ...instance.status, state, reason: null };
  s.options.logger.info(
    { instance: instance.status.id },
    state === 'suspended' ? 'instance process group stopped (SIGSTOP)' : 'instance process group continued (SIGCONT)',
  );
  s.emit(instance);
}
