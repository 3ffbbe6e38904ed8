/**
 * Suspending and resuming an instance's container (the runtime port's `suspend`/`resume`,
 * FlashBoot): the engine's pause freezes every process of the container through its cgroup, its
 * memory, files and network bindings kept; unpause thaws it where it was. The instance reads
 * `suspended` while its container is paused, whoever paused it: the engine's `pause`/`unpause`
 * events and its listing after a reconnect keep that true (container-events.ts), and `attach()`
 * adopts a paused container as `suspended` (container-launch.ts).
 */
import type { InstanceState } from '../runtime.js';
import type { Supervision } from './container-instance.js';
import type { Live } from './live-instances.js';

/** What pausing needs from the runtime that holds the instances. */
export interface PauseDeps extends Supervision {
  /** Awaits an engine call; an unreachable engine is reported to the events follower too. */
  call<T>(promise: Promise<T>): Promise<T>;
}

/** One pause or unpause at a time per instance, in the order asked. */
const turns = new WeakMap<Live, Promise<unknown>>();

/** Freezes the container of a running instance; a suspended one is left as it is. */
export function suspendContainer(d: PauseDeps, id: string): Promise<void> {
  return inTurn(d, id, 'suspend', async (live) => {
    const state = live.status.state;
    if (state === 'suspended') return;
    if (state !== 'running') throw new Error(`instance "${id}" is ${state}: only a running instance can be suspended`);
    await d.call(d.client.pauseContainer(live.containerId));
    settlePaused(d, live, true);
  });
}

/** Thaws the container of a suspended instance; a running one is left as it is. */
export function resumeContainer(d: PauseDeps, id: string): Promise<void> {
  return inTurn(d, id, 'resume', async (live) => {
    const state = live.status.state;
    if (state === 'running') return;
    if (state !== 'suspended')
      throw new Error(`instance "${id}" is ${state}: only a suspended instance can be resumed`);
    await d.call(d.client.unpauseContainer(live.containerId));
    settlePaused(d, live, false);
  });
}

/**
 * The engine says the container is (`paused`) or is not paused: a running instance becomes
 * `suspended`, a suspended one `running`; any other state is left to what watches it.
 */
export function settlePaused(s: Supervision, live: Live, paused: boolean): void {
  if (!s.live.current(live) || live.stopping) return;
  const from: InstanceState = paused ? 'running' : 'suspended';
  if (live.status.state !== from) return;
  live.status = { ...live.status, state: paused ? 'suspended' : 'running', reason: null };
  s.options.logger.info({ instance: live.id }, paused ? 'instance container paused' : 'instance container unpaused');
  s.live.emit(live);
}

async function inTurn(d: PauseDeps, id: string, what: string, act: (live: Live) => Promise<void>): Promise<void> {
  const live = d.live.get(id);
  if (!live?.launched) throw new Error(`cannot ${what} instance "${id}": it does not run here`);
  const previous = turns.get(live) ?? Promise.resolve();
  const mine = previous
    .catch(() => undefined)
    .then(() => {
      if (live.stopping || !d.live.current(live))
        throw new Error(`cannot ${what} instance "${id}": it is being stopped`);
      return act(live);
    });
  turns.set(live, mine);
  return mine;
}
