/**
 * How the Docker runtime comes to hold a live instance: it launches one (a kept container of the
 * same spec adopted as it runs, else a container prepared by container-preparer.ts and started),
 * or it adopts the containers it finds running when it attaches (a restarted server).
 */
import type { HealthProbe, ImageSpec } from '../../domain/image-spec.js';
import type { AttachedInstance, InstanceSpec, InstanceStatus } from '../runtime.js';
import { goneNetwork, type ContainerPreparer, type Prepared } from './container-preparer.js';
import { observeExit, superviseHealth, type Supervision } from './container-instance.js';
import { LABEL, ownerOf } from './docker-names.js';
import { DockerEngineError } from './engine-connection.js';
import type { EngineEvents } from './engine-events.js';
import type { ContainerSummary } from './engine-types.js';
import type { InstanceNetworks } from './instance-networks.js';
import { copyStatus, newLive, type Live } from './live-instances.js';
import { StartSlots } from './start-slots.js';

/** The engine's states of a container whose process is there (running, or about to). */
export const RUNNING_CONTAINER = new Set(['running', 'paused', 'restarting']);
/** Containers inspected at once while attaching. */
const ATTACH_INSPECTIONS = 16;

/** What launching and adopting containers needs from the runtime that holds the instances. */
export interface Launcher extends Supervision {
  /** A Map, not the config's object: image names are tenant input (`constructor`, `__proto__`). */
  images: ReadonlyMap<string, ImageSpec>;
  preparer: ContainerPreparer;
  /** The account networks; null only when a test takes that defence away. */
  networks: InstanceNetworks | null;
  events: Pick<EngineEvents, 'reportUnreachable' | 'start'>;
  /** Awaits an engine call; an unreachable engine is reported to the events follower too. */
  call<T>(promise: Promise<T>): Promise<T>;
  /** The engine's data root joins the folders hidden from tenants (once). */
  learnDataRoot(): Promise<void>;
  /** Whether the runtime was closed (it detached). */
  closed(): boolean;
}

/** What adopting a running container needs to know of it. */
interface RunningContainer {
  Id: string;
  /** null: unknown */
  startedMs: number | null;
  memoryBytes: number;
  /** its processes are frozen (the engine's pause): adopted as `suspended` */
  paused: boolean;
}

/**
 * Prepares the container of `spec` and starts it. `again`: a second attempt, after the engine
 * refused the first for a reason it can mend once (a network removed behind Gantry's back, an
 * open-files limit the engine cannot raise).
 */
export async function launchContainer(l: Launcher, spec: InstanceSpec, again = false): Promise<InstanceStatus> {
  l.events.start();
  await l.learnDataRoot();
  // The start's own probe first: an agent's runtime gets it from the control plane's images map.
  const health = spec.health ?? l.images.get(spec.image)?.health;
  const probe = health ? probeOf(health, spec) : null;
  const prepared: Prepared = await l.call(l.preparer.prepare(spec));
  if (prepared.kind === 'running') {
    const { info } = prepared;
    // A start means it runs: a container left paused is thawed.
    if (info.State.Paused) await l.call(l.client.unpauseContainer(info.Id));
    const live = adoptContainer(
      l,
      spec.id,
      {
        Id: info.Id,
        startedMs: parseEngineTime(info.State.StartedAt),
        memoryBytes: info.HostConfig.Memory ?? 0,
        paused: false,
      },
      probe,
      probe ? 'starting' : 'running',
    );
    l.live.emit(live);
    if (probe) superviseHealth(l, live);
    return copyStatus(live.status);
  }
  const { containerId, plan } = prepared;
  const live = newLive(spec.id, containerId, plan.body.HostConfig.Memory ?? 0, probe);
  live.logsSinceMs = null;
  // Known before the engine starts it, so an exit the events report at once is not missed.
  l.live.add(live);
  try {
    await l.call(l.client.startContainer(containerId));
  } catch (err) {
    l.live.forget(live);
    // A container that cannot start (a port taken, a missing command) is not kept to fail again.
    await l.client.removeContainer(containerId, { force: true, volumes: true }).catch(() => false);
    // Its network was removed behind Gantry's back after it was created: made again, once.
    const gone = goneNetwork(err);
    if (gone && l.networks && !again) {
      l.networks.forget(gone);
      return launchContainer(l, spec, true);
    }
    // An engine whose own open-files limit is lower cannot raise a container's: again with the
    // engine's (the plan then asks none, so this happens once).
    if (plan.body.HostConfig.Ulimits && err instanceof DockerEngineError && /rlimit/i.test(err.engineMessage)) {
      l.preparer.openFilesRefused(err.engineMessage);
      return launchContainer(l, spec, again);
    }
    throw err;
  }
  live.launched = true;
  live.status = {
    id: spec.id,
    state: probe ? 'starting' : 'running',
    startedAt: l.options.clock.now(),
    exitCode: null,
    reason: null,
    stats: null,
  };
  l.options.logger.info(
    { instance: spec.id, image: spec.image, container: containerId.slice(0, 12) },
    'instance container started',
  );
  // Closed meanwhile: left running (close detaches; a later attach adopts it).
  if (l.closed()) return copyStatus(live.status);
  l.live.emit(live);
  if (probe) superviseHealth(l, live);
  if (live.exitSeen) void observeExit(l, live);
  return copyStatus(live.status);
}

/**
 * What `attach()` reports of the namespace's `containers`: each instance whose container runs is
 * adopted as it is (or answered as held, when this runtime already holds that container); one
 * whose container does not run is reported with no status.
 */
export async function adoptContainers(l: Launcher, containers: ContainerSummary[]): Promise<AttachedInstance[]> {
  // A running container is adopted from the listing: its labels carry the memory limit, and it
  // started when it was created (a start always creates a fresh container). One from an older
  // Gantry without the label is inspected, a few at a time.
  const inspections = new StartSlots(ATTACH_INSPECTIONS);
  const inspected = new Map(
    await Promise.all(
      containers
        .filter(
          (c) => c.Labels?.[LABEL.instance] && RUNNING_CONTAINER.has(c.State) && c.Labels[LABEL.memory] === undefined,
        )
        .map(async (c) => [c.Id, await inspections.run(() => l.call(l.client.inspectContainer(c.Id)))] as const),
    ),
  );
  const found: AttachedInstance[] = [];
  for (const c of containers) {
    const id = c.Labels?.[LABEL.instance];
    if (!id) continue;
    const owner = ownerOf(c.Labels);
    const held = l.live.get(id);
    if (held?.containerId === c.Id) {
      found.push({ id, owner, status: copyStatus(held.status) });
      continue;
    }
    const memory = Number(c.Labels?.[LABEL.memory]);
    const seen =
      RUNNING_CONTAINER.has(c.State) && Number.isFinite(memory)
        ? { Id: c.Id, startedMs: c.Created * 1000, memoryBytes: memory, paused: c.State === 'paused' }
        : null;
    const info = inspected.get(c.Id);
    const running =
      seen ??
      (info?.State.Running
        ? {
            Id: info.Id,
            startedMs: parseEngineTime(info.State.StartedAt),
            memoryBytes: info.HostConfig.Memory ?? 0,
            paused: info.State.Paused,
          }
        : null);
    if (!running) {
      found.push({ id, owner, status: null });
      continue;
    }
    // A paused container (its instance suspended when the last server went) stays suspended.
    const live = adoptContainer(l, id, running, null, running.paused ? 'suspended' : 'running');
    found.push({ id, owner, status: copyStatus(live.status) });
  }
  return found;
}

/** Takes a running container as the live instance `id`, as it is. */
function adoptContainer(
  s: Supervision,
  id: string,
  container: RunningContainer,
  probe: Live['probe'],
  state: 'starting' | 'running' | 'suspended',
): Live {
  const live = newLive(id, container.Id, container.memoryBytes, probe);
  const started = container.startedMs;
  live.launched = true;
  // Its current run's output begins about when the engine says it started.
  live.logsSinceMs = started === null ? null : started - 1_000;
  live.status = { id, state, startedAt: started ?? s.options.clock.now(), exitCode: null, reason: null, stats: null };
  s.live.add(live);
  return live;
}

/** The health probe of an instance: its published port on 127.0.0.1 (on the host's network, the port itself). */
function probeOf(health: HealthProbe, spec: InstanceSpec): Live['probe'] {
  const binding = spec.ports.find((p) => p.private === health.port);
  if (!binding) {
    const ports = spec.ports.map((p) => `${p.private}/${p.protocol}`).join(', ') || 'none';
    throw new Error(
      `cannot start image "${spec.image}": its health check probes port ${health.port}, which this instance does not expose (ports: ${ports})`,
    );
  }
  const port = spec.networkMode === 'host' ? binding.private : binding.public;
  return { target: { type: health.type, host: '127.0.0.1', port, path: health.path || '/' }, health };
}

/** An engine timestamp (RFC 3339, nanoseconds) in ms; null for the zero time or nonsense. */
export function parseEngineTime(text: string): number | null {
  const ms = Date.parse(text);
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}
