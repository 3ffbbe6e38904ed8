/**
 * What the engine tells the Docker runtime of its containers, as engine-events.ts follows it: an
 * event that one ended; an outage, which turns the live instances `unknown`; and after each
 * (re)connect the listing, which settles what happened in the gap.
 */
import { endInstance, observeExit, superviseHealth, type Supervision } from './container-instance.js';
import { parseEngineTime, RUNNING_CONTAINER } from './container-launch.js';
import { settlePaused } from './container-pause.js';
import type { AccountSeparation } from './account-separation.js';
import { LABEL, namespaceFilter } from './docker-names.js';
import { isUnreachable } from './engine-connection.js';
import type { Outage } from './engine-events.js';
import type { EngineEvent } from './engine-types.js';
import { LIVE_STATES, type Live } from './live-instances.js';

/** How far before a (re)start a kept container's log is read from, for a clock that steps. */
const LOG_CLOCK_SLACK_MS = 50;

/** What following the engine needs from the runtime that holds the instances. */
export interface EngineWatch extends Supervision {
  namespace: string;
  separation: Pick<AccountSeparation, 'installFirewall'>;
}

/**
 * A container of a live instance died or was destroyed: find out how (unless the runtime did it).
 * Its `oom` event is noted: the engine may record the kill for the memory limit only through it.
 */
export function onContainerEvent(s: Supervision, event: EngineEvent): void {
  if (event.Type !== 'container' || !['die', 'destroy', 'oom', 'pause', 'unpause'].includes(event.Action)) return;
  const id = event.Actor.Attributes?.[LABEL.instance];
  const live = id === undefined ? undefined : s.live.get(id);
  if (!live || live.containerId !== event.Actor.ID) return;
  if (event.Action === 'oom') {
    live.oomSeen = true;
    return;
  }
  // Paused or thawed, by the runtime or outside Gantry: the instance says so (container-pause.ts).
  if (event.Action === 'pause' || event.Action === 'unpause') {
    if (live.launched) settlePaused(s, live, event.Action === 'pause');
    return;
  }
  if (live.stopping) return;
  if (!live.launched) {
    live.exitSeen = true;
    return;
  }
  void observeExit(s, live);
}

/** The engine became unreachable: what was starting, running or suspended is `unknown`, saying why. */
export function onEngineOutage(s: Supervision, outage: Outage): void {
  for (const live of s.live.all()) {
    const { state } = live.status;
    if (!live.launched || live.stopping || (state !== 'starting' && state !== 'running' && state !== 'suspended'))
      continue;
    live.beforeOutage = live.status.state;
    live.status = { ...live.status, state: 'unknown', reason: s.hide(outage.reason) };
    s.live.emit(live);
  }
}

/**
 * After each (re)connect, before events are read: the listing is the truth about the gap.
 * Running containers get their state back; one that died while the engine was unreachable (an
 * engine restart stops every container) is started again, since nobody stopped its instance;
 * one that ended before that, or is gone, ends its instance.
 */
export async function reconcileContainers(w: EngineWatch, outage: Outage | null): Promise<void> {
  // An engine that restarted (or a host that rebooted under it) may have lost the rules.
  if (outage) await w.separation.installFirewall();
  const containers = await w.client.listContainers({ all: true, filters: namespaceFilter(w.namespace) });
  const byId = new Map(containers.map((c) => [c.Id, c]));
  for (const live of w.live.all()) {
    if (!live.launched || live.stopping || !LIVE_STATES.has(live.status.state)) continue;
    const c = byId.get(live.containerId);
    if (c && RUNNING_CONTAINER.has(c.State)) {
      restore(w, live);
      // Paused or thawed while the engine was out of sight.
      settlePaused(w, live, c.State === 'paused');
      continue;
    }
    if (!c) {
      endInstance(w, live, null, 'its container was removed outside Gantry');
      continue;
    }
    const info = await w.client.inspectContainer(live.containerId);
    const finished = parseEngineTime(info?.State.FinishedAt ?? '');
    if (outage && finished !== null && finished >= outage.sinceWallMs) await restartAfterOutage(w, live);
    else {
      restore(w, live);
      await observeExit(w, live);
    }
  }
}

function restore(s: Supervision, live: Live): void {
  if (live.status.state !== 'unknown') return;
  live.status = { ...live.status, state: live.beforeOutage ?? 'running', reason: null };
  live.beforeOutage = null;
  s.live.emit(live);
}

async function restartAfterOutage(s: Supervision, live: Live): Promise<void> {
  s.options.logger.warn(
    { instance: live.id },
    'its container died while the Docker Engine was unreachable; starting it again',
  );
  try {
    live.logsSinceMs = Date.now() - LOG_CLOCK_SLACK_MS;
    await s.client.startContainer(live.containerId);
  } catch (err) {
    if (isUnreachable(err)) throw err;
    s.options.logger.warn({ instance: live.id, err: (err as Error).message }, 'cannot start its container again');
    endInstance(
      s,
      live,
      null,
      `its container stopped while the Docker Engine was unreachable and could not be started again: ${s.hide((err as Error).message)}`,
      true,
    );
    return;
  }
  live.beforeOutage = null;
  live.status = {
    ...live.status,
    state: live.probe ? 'starting' : 'running',
    startedAt: s.options.clock.now(),
    exitCode: null,
    reason: null,
  };
  s.live.emit(live);
  if (live.probe) superviseHealth(s, live);
}
