/**
 * Applies the control plane's operations to the runtime: in order per instance (a stop waits for
 * the start before it), instances apart from each other, each once in effect. An operation
 * already applied (applied-operations.ts) is acknowledged again with its result; one being
 * applied when it is delivered again is left to finish.
 */
import type { Logger } from 'pino';
import type { HealthProbe } from '../domain/image-spec.js';
import type { Operation, OperationAck } from '../fleet/protocol.js';
import type { InstanceOwner, Runtime } from '../runtime/runtime.js';
import type { AppliedOperations, AppliedResult } from './applied-operations.js';
import type { StreamOperation } from './stream-dialer.js';

/** A failure's reason is cut to this many characters in its acknowledgement. */
const MAX_ERROR_CHARS = 2_000;

export interface OperationApplierDeps {
  runtime: Pick<
    Runtime,
    | 'start'
    | 'stop'
    | 'remove'
    | 'removeVolume'
    | 'inspect'
    | 'suspend'
    | 'resume'
    | 'prepareImage'
    | 'preparedImages'
    | 'discardImage'
  >;
  /** This host's id (the runtime port's image calls name it; one engine's runtime ignores it). @default '' */
  hostId?: string;
  applied: AppliedOperations;
  /** The owner of each instance, for reports: set by a start, dropped by a remove. */
  owners: Map<string, InstanceOwner>;
  /** Instances stopped and kept: added by a stop, dropped by a start or a remove. */
  kept: Set<string>;
  /** A stop or remove was applied to the instance: told right before its acknowledgement, so the report carrying the ack shows it. */
  operated(instanceId: string): void;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** An operation's outcome, to acknowledge in the next report. */
  acknowledge(ack: OperationAck): void;
  /** Opens `stream` operations (stream-dialer.ts). @default none: they fail */
  streams?: { open(op: StreamOperation): Promise<AppliedResult> };
}

export class OperationApplier {
  readonly #deps: OperationApplierDeps;
  readonly #applying = new Set<string>();
  /** per instance (or volume): the last operation queued, which the next one waits for */
  readonly #queues = new Map<string, Promise<void>>();
  /** Streams being opened (each until it connected or failed, and was acknowledged). */
  readonly #streams = new Set<Promise<void>>();

  constructor(deps: OperationApplierDeps) {
    this.#deps = deps;
  }

  /** Operations being applied or waiting their turn. */
  get applying(): number {
    return this.#applying.size;
  }

  dispatch(op: Operation): void {
    const done = this.#deps.applied.get(op.id);
    if (done) {
      this.#deps.acknowledge({ opId: op.id, ...done });
      return;
    }
    if (this.#applying.has(op.id)) return;
    this.#applying.add(op.id);
    // A stream runs beside the instance's operations: a log follow must not hold up its stop.
    if (op.kind === 'stream') {
      const opening = this.#openStream(op).finally(() => this.#streams.delete(opening));
      this.#streams.add(opening);
      return;
    }
    const key = queueOf(op);
    const queued: Promise<void> = (this.#queues.get(key) ?? Promise.resolve())
      .then(() => this.#apply(op))
      .then(async (result) => {
        try {
          await this.#deps.applied.record(op.id, result);
        } catch (err) {
          // Acknowledged all the same: it was applied; only a redelivery after a restart would apply it again.
          this.#deps.logger.error({ err, opId: op.id }, 'cannot write the applied operations file');
        }
        if (result.ok && (op.kind === 'stop' || op.kind === 'remove')) this.#deps.operated(op.instanceId);
        this.#deps.acknowledge({ opId: op.id, ...result });
      })
      .catch((err: unknown) => this.#deps.logger.error({ err, opId: op.id }, 'an operation could not be acknowledged'))
      .finally(() => {
        this.#applying.delete(op.id);
        if (this.#queues.get(key) === queued) this.#queues.delete(key);
      });
    this.#queues.set(key, queued);
  }

  async #openStream(op: StreamOperation): Promise<void> {
    try {
      const result = this.#deps.streams
        ? await this.#deps.streams.open(op).catch((err: unknown) => ({ ok: false, error: (err as Error).message }))
        : { ok: false, error: 'this agent opens no streams' };
      if (!result.ok)
        this.#deps.logger.warn(
          { opId: op.id, instance: op.instanceId, reason: result.error },
          'a stream could not be opened',
        );
      await this.#deps.applied
        .record(op.id, result)
        .catch((err: unknown) =>
          this.#deps.logger.error({ err, opId: op.id }, 'cannot write the applied operations file'),
        );
      this.#deps.acknowledge({ opId: op.id, ...result });
    } finally {
      this.#applying.delete(op.id);
    }
  }

  /**
   * FlashBoot's pre-pulled images, through the runtime (the Docker runtime's prepared-images.ts:
   * the registry policy and the private-image rules judge the pull as a start's). The credential is
   * neither logged nor kept: only the result goes to applied.json.
   */
  async #image(op: ImageOperation): Promise<AppliedResult> {
    const { runtime, logger } = this.#deps;
    const hostId = this.#deps.hostId ?? '';
    if (!runtime.prepareImage || !runtime.preparedImages || !runtime.discardImage)
      return { ok: false, error: "this host's runtime cannot pre-pull images" };
    if (op.kind === 'preparedImages') return { ok: true, result: { images: await runtime.preparedImages(hostId) } };
    if (typeof op.image !== 'string' || op.image === '')
      return { ok: false, error: `the ${op.kind} operation names no image` };
    if (op.kind === 'discardImage') {
      const outcome = await runtime.discardImage(hostId, op.image);
      logger.info({ opId: op.id, kind: op.kind, image: op.image, outcome }, 'operation applied');
      return { ok: true, result: { outcome } };
    }
    const { pulled, sizeBytes } = await runtime.prepareImage(hostId, {
      image: op.image,
      accountId: op.accountId,
      registryAuth: op.registryAuth ?? null,
    });
    logger.info({ opId: op.id, kind: op.kind, image: op.image, pulled, sizeBytes }, 'operation applied');
    return { ok: true, result: { pulled, sizeBytes } };
  }

  /** Resolves once every operation dispatched so far is applied and acknowledged. */
  async idle(): Promise<void> {
    while (this.#queues.size > 0 || this.#streams.size > 0)
      await Promise.allSettled([...this.#queues.values(), ...this.#streams]);
  }

  async #apply(op: Operation): Promise<AppliedResult> {
    const { runtime, owners, kept, logger } = this.#deps;
    try {
      switch (op.kind) {
        case 'start': {
          if (op.spec?.id !== op.instanceId)
            return {
              ok: false,
              error: `the start operation's spec is for instance "${op.spec?.id}", not "${op.instanceId}"`,
            };
          const problem = op.health === undefined ? null : probeProblem(op.health);
          if (problem) return { ok: false, error: `the start operation's health probe ${problem}` };
          // Started already (the start was applied, and the agent restarted before it could remember it): adopted as it runs.
          const current = await runtime.inspect(op.instanceId);
          if (
            current &&
            (current.state === 'starting' || current.state === 'running' || current.state === 'suspended')
          ) {
            owners.set(op.instanceId, op.spec.owner);
            return { ok: true };
          }
          owners.set(op.instanceId, op.spec.owner);
          // Whatever was kept, the start replaces: it runs now, or the runtime reports why not.
          kept.delete(op.instanceId);
          // The control plane's probe for the image gates `running`, as with runtime: docker.
          await runtime.start(op.health ? { ...op.spec, health: op.health } : op.spec);
          break;
        }
        case 'stop':
          await runtime.stop(op.instanceId, op.discard ? { discard: true } : undefined);
          // An id the agent never had (no owner) stays unknown: nothing is kept of it.
          // Kept at once, so a full report sent before the acknowledgement lists it too.
          if (owners.has(op.instanceId)) kept.add(op.instanceId);
          break;
        case 'remove':
          await runtime.remove(op.instanceId);
          owners.delete(op.instanceId);
          kept.delete(op.instanceId);
          break;
        case 'removeVolume':
          await runtime.removeVolume({ kind: 'network', volumeId: op.volumeId });
          break;
        case 'suspend':
        case 'resume': {
          if (typeof op.instanceId !== 'string' || op.instanceId === '')
            return { ok: false, error: `the ${op.kind} operation names no instance` };
          const act = runtime[op.kind];
          if (!act)
            return {
              ok: false,
              error: `this host's runtime cannot ${op.kind} instances (it has no suspend capability)`,
            };
          await act.call(runtime, op.instanceId);
          break;
        }
        case 'prepareImage':
        case 'discardImage':
        case 'preparedImages':
          return await this.#image(op);
        case 'stream':
          // dispatched apart (#openStream)
          return { ok: false, error: 'a stream is not applied in order' };
        default: {
          const unknown: never = op;
          return {
            ok: false,
            error: `unknown operation kind "${String((unknown as { kind?: unknown }).kind)}": update gantry agent on this host`,
          };
        }
      }
      logger.info(
        { opId: op.id, kind: op.kind, ...('instanceId' in op ? { instance: op.instanceId } : { volume: op.volumeId }) },
        'operation applied',
      );
      return { ok: true };
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      logger.warn({ opId: op.id, kind: op.kind, reason }, 'operation failed');
      return { ok: false, error: reason.length > MAX_ERROR_CHARS ? `${reason.slice(0, MAX_ERROR_CHARS)}…` : reason };
    }
  }
}

type ImageOperation = Extract<Operation, { kind: 'prepareImage' | 'discardImage' | 'preparedImages' }>;

/** The operations an operation waits for: those of its instance, volume or image, in order. */
function queueOf(op: Exclude<Operation, { kind: 'stream' }>): string {
  switch (op.kind) {
    case 'removeVolume':
      return `volume:${op.volumeId}`;
    case 'prepareImage':
    case 'discardImage':
      return `image:${op.image}`;
    case 'preparedImages':
      return 'images';
    default:
      return `instance:${op.instanceId}`;
  }
}

/** What is wrong with a start's health probe (it comes over the wire), or null. */
function probeProblem(health: unknown): string | null {
  if (typeof health !== 'object' || health === null) return 'is not an object';
  const h = health as Partial<Record<keyof HealthProbe, unknown>>;
  if (h.type !== 'http' && h.type !== 'tcp') return 'type is neither http nor tcp';
  if (!Number.isInteger(h.port) || (h.port as number) < 1 || (h.port as number) > 65535)
    return 'port is not a port number';
  if (typeof h.path !== 'string') return 'path is not a string';
  for (const key of ['intervalMs', 'timeoutMs'] as const) {
    const v = h[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return `${key} is not a positive number`;
  }
  return null;
}
