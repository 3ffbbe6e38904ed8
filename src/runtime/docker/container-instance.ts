/**
 * The supervision of one instance's container (docker-runtime.ts holds the instances,
 * live-instances.ts remembers them): its health check, its end on its own, a container disk it
 * outgrew, each a transition of the instance's status announced through the runtime.
 */
import type { InstanceState } from '../runtime.js';
import { describeTarget, waitUntilHealthy } from '../health-probe.js';
import type { DockerClient } from './docker-client.js';
import type { DockerRuntimeOptions } from './docker-runtime-options.js';
import { isUnreachable } from './engine-connection.js';
import type { EngineEvents } from './engine-events.js';
import { tailLines } from './engine-streams.js';
import { exitReason, withOutput } from './exit-reason.js';
import type { Live, LiveInstances } from './live-instances.js';

/** What supervising an instance's container needs from the runtime that holds it. */
export interface Supervision {
  client: DockerClient;
  live: LiveInstances;
  options: Pick<DockerRuntimeOptions, 'clock' | 'logger' | 'stopGraceMs'>;
  /** the engine's events follower, told when a call finds the engine unreachable */
  events: Pick<EngineEvents, 'reportUnreachable'>;
  /** What the engine said, without this host's paths (host-paths.ts): for tenants' eyes. */
  hide(text: string): string;
}

/** Probes its health until it passes (→ running) or times out (→ failed, its container stopped). */
export function superviseHealth(s: Supervision, live: Live): void {
  const { target, health } = live.probe!;
  const abort = new AbortController();
  live.probing = abort;
  void waitUntilHealthy(target, {
    intervalMs: Math.max(10, health.intervalMs),
    timeoutMs: health.timeoutMs,
    signal: abort.signal,
  }).then(async (result) => {
    if (!s.live.current(live) || live.stopping) return;
    if (result.ok) {
      if (live.status.state === 'starting') {
        live.status = { ...live.status, state: 'running' };
        s.live.emit(live);
      } else if (live.status.state === 'unknown' && live.beforeOutage === 'starting') live.beforeOutage = 'running';
      return;
    }
    if (result.aborted || live.status.state !== 'starting') return;
    const tail = await tailOf(s, live);
    if (!s.live.current(live) || live.stopping || stateOf(live) !== 'starting') return;
    const reason = withOutput(
      `health check ${describeTarget(target)} did not pass within ${health.timeoutMs} ms (last attempt: ${result.lastError})`,
      tail,
    );
    live.status = { ...live.status, state: 'failed', reason, stats: null };
    s.live.emit(live);
    // A failed instance must not keep running (and holding its port) until someone stops it.
    await s.client.stopContainer(live.containerId, graceSeconds(s.options)).catch((err: unknown) => {
      s.options.logger.warn({ err, instance: live.id }, 'cannot stop the container that failed its health check');
    });
  });
}

/**
 * Its container wrote more to its writable layer than its disk, which the storage driver cannot
 * cap: the instance fails, saying so, and its container is stopped (kept, as any stop keeps it).
 */
export async function diskExceeded(s: Supervision, live: Live, usedBytes: number, limitBytes: number): Promise<void> {
  if (!s.live.current(live) || live.stopping || live.status.state === 'failed') return;
  live.probing?.abort();
  const reason = `its container disk grew to ${formatGb(usedBytes)} GB, past its ${formatGb(limitBytes)} GB (containerDiskInGb): the engine's storage driver cannot cap it, so Gantry stopped the instance`;
  s.options.logger.warn({ instance: live.id, usedBytes, limitBytes }, 'stopping an instance past its container disk');
  live.status = { ...live.status, state: 'failed', reason, stats: null };
  s.live.emit(live);
  await s.client.stopContainer(live.containerId, graceSeconds(s.options)).catch((err: unknown) => {
    s.options.logger.warn({ err, instance: live.id }, 'cannot stop the container past its disk');
  });
}

/** A process the kernel killed (SIGKILL) exits with 128 + 9. */
const OOM_EXIT_CODE = 137;
/** How long a SIGKILLed container with a memory limit waits for the engine's `oom` event. */
const OOM_EVENT_WAIT_MS = 2_000;

/**
 * Whether the kernel killed the container for its memory limit, when the engine's state does not
 * say so: the engine sets `OOMKilled` only when the kernel's OOM notice reached it before the
 * exit, and under load it can come after; its `oom` event comes either way (container-events.ts).
 */
async function oomEventOf(live: Live): Promise<boolean> {
  if (!(live.memoryBytes > 0)) return false;
  for (let waited = 0; !live.oomSeen && waited < OOM_EVENT_WAIT_MS; waited += 50)
    await new Promise((resolve) => setTimeout(resolve, 50));
  return live.oomSeen;
}

/** The container of a live instance stopped on its own: find out how, and say so. */
export async function observeExit(s: Supervision, live: Live): Promise<void> {
  if (live.observing || live.stopping || !s.live.current(live)) return;
  live.observing = true;
  try {
    const info = await s.client.inspectContainer(live.containerId);
    if (live.stopping || !s.live.current(live)) return;
    if (!info) {
      endInstance(s, live, null, 'its container was removed outside Gantry');
      return;
    }
    if (info.State.Running) return;
    const { ExitCode: code } = info.State;
    const oom = info.State.OOMKilled || (code === OOM_EXIT_CODE && (await oomEventOf(live)));
    if (live.status.state === 'failed') {
      // It failed its health check and the runtime stopped it.
      live.status = { ...live.status, exitCode: code };
      return;
    }
    const tail = code !== 0 || oom ? await tailOf(s, live) : '';
    if (live.stopping || !s.live.current(live) || stateOf(live) === 'failed') return;
    const starting =
      (live.status.state === 'unknown' ? live.beforeOutage : live.status.state) === 'starting' && live.probe !== null;
    // The engine's own words on why (a start that failed in the runtime) are the operator's; the tenant's are cleaned.
    const engineError = info.State.Error;
    if (engineError)
      s.options.logger.info({ instance: live.id, err: engineError }, 'the engine says why the container ended');
    // Killed for its memory limit is a failure (the pod's ERROR), not an ending of its own.
    endInstance(
      s,
      live,
      code,
      exitReason({ ...info.State, OOMKilled: oom, Error: engineError ? s.hide(engineError) : engineError }, tail, {
        starting,
        memoryBytes: live.memoryBytes,
      }),
      starting || oom,
    );
  } catch (err) {
    if (isUnreachable(err)) s.events.reportUnreachable(err);
    else s.options.logger.warn({ err, instance: live.id }, 'cannot inspect the container that ended');
  } finally {
    live.observing = false;
  }
}

/** The instance ended (`exited`, or `failed`), for `reason`. */
export function endInstance(s: Supervision, live: Live, exitCode: number | null, reason: string, failed = false): void {
  live.probing?.abort();
  live.beforeOutage = null;
  live.status = { ...live.status, state: failed ? 'failed' : 'exited', exitCode, reason, stats: null };
  s.options.logger.info({ instance: live.id, exitCode }, 'instance container ended');
  s.live.emit(live);
}

/** The stop grace in whole seconds, as the engine's stop call takes it. */
export function graceSeconds(options: Pick<DockerRuntimeOptions, 'stopGraceMs'>): number {
  return Math.max(0, Math.ceil(options.stopGraceMs / 1000));
}

/** The last lines of its current run's output, for a reason; empty when they cannot be read. */
async function tailOf(s: Supervision, live: Live): Promise<string> {
  try {
    return tailLines(
      await s.client.containerLogs(live.containerId, {
        tail: 50,
        ...(live.logsSinceMs !== null ? { sinceMs: live.logsSinceMs } : {}),
      }),
    );
  } catch {
    return '';
  }
}

/** Read through a function so TypeScript does not keep a narrowing across an await. */
const stateOf = (live: Live): InstanceState => live.status.state;

/** Bytes as GB (GiB) with at most two decimals. */
const formatGb = (bytes: number): string => String(Number((bytes / 1024 ** 3).toFixed(2)));
