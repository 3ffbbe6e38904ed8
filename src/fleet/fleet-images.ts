/**
 * FlashBoot's pre-pulled images on fleet hosts (the runtime port's `prepareImage`,
 * `preparedImages`, `discardImage`; serverless/image-prepull.ts calls them per host): each is an
 * operation to the host's agent, which applies it through its Docker runtime (prepared-images.ts:
 * the registry policy and the private-image rules judge the pull as a start's) and answers in its
 * ack's `result`. The call resolves on that ack.
 *
 * What the host holds is asked of the agent (`preparedImages`, an operation) rather than read
 * from its reports: the answer comes from the engine's own record at that moment (an operator's
 * prune is seen), needs no copy kept per host nor a new journal entry for other replicas (the ack's
 * result rides the journal like any ack), and is only asked by the replica that pre-pulls.
 *
 * - A host that is unreachable or revoked is sent nothing: the call rejects at once.
 * - A call while the same operation is under way (a pull outlasting its wait, asked again by the
 *   next pass) waits for that one rather than queueing another.
 * - An agent older than these operations acknowledges "unknown operation kind": the call rejects
 *   saying to update gantry agent, and `canPrepare(hostId)` is false (nothing more is sent) until
 *   its agent reports in full again, as for suspend (fleet-suspend.ts).
 * - What the agent answers is checked before it is believed (its shape, its bounds).
 */
import { hostAway } from './fleet-instances.js';
import { hideHostPaths } from '../runtime/host-paths.js';
import type { ImagePreparation, PreparedImage } from '../runtime/runtime.js';
import { whyRevoked, type FleetLedger } from './fleet-ledger.js';
import type { NewOperation, Operation, OperationAck, OperationResult } from './protocol.js';

/** How long a pre-pull waits for its ack (an image of many GB); the pull goes on after, and a later call waits for it. */
const PREPARE_WAIT_MS = 15 * 60_000;
/** How long a listing or a removal waits for its ack. */
const ACK_WAIT_MS = 60_000;
/** Longest reason kept from an agent's refusal. */
const MAX_REASON = 2_000;
/** Most images believed of one host's listing. */
const MAX_LISTED = 10_000;

type ImageOp = Extract<NewOperation, { kind: 'prepareImage' | 'discardImage' | 'preparedImages' }>;
type Send = (hostId: string, op: NewOperation) => Promise<Operation>;

export class FleetImages {
  readonly #ledger: FleetLedger;
  readonly #send: Send;
  readonly #waits: { prepare: number; other: number };
  /** hosts whose agent answered an image operation as unknown */
  readonly #unable = new Set<string>();
  /** `kind\0host\0image`: the ack of an operation under way */
  readonly #pending = new Map<string, Promise<OperationAck>>();

  constructor(ledger: FleetLedger, send: Send, waits = { prepare: PREPARE_WAIT_MS, other: ACK_WAIT_MS }) {
    this.#ledger = ledger;
    this.#send = send;
    this.#waits = waits;
  }

  /** Whether the host's agent is known to apply image operations (not one that refused them as unknown, not revoked). */
  canPrepare(hostId: string): boolean {
    return !this.#unable.has(hostId) && whyRevoked(this.#ledger, hostId) === null;
  }

  /** The host's agent reported in full (it reconnected, perhaps updated): it is asked again. */
  heardInFull(hostId: string): void {
    this.#unable.delete(hostId);
  }

  async prepare(hostId: string, request: ImagePreparation): Promise<{ pulled: boolean; sizeBytes: number }> {
    const { image, accountId, registryAuth } = request;
    const op: ImageOp = { kind: 'prepareImage', image, accountId, registryAuth };
    const r = (await this.#ask(hostId, op, image, this.#waits.prepare)) as Partial<Record<string, unknown>> | undefined;
    if (typeof r?.pulled !== 'boolean' || !isSize(r.sizeBytes))
      throw new Error(`host ${hostId} acknowledged the pre-pull of "${image}" without saying what it pulled`);
    return { pulled: r.pulled, sizeBytes: r.sizeBytes };
  }

  async list(hostId: string): Promise<PreparedImage[]> {
    const r = (await this.#ask(hostId, { kind: 'preparedImages' }, '', this.#waits.other)) as
      Partial<Record<string, unknown>> | undefined;
    if (!Array.isArray(r?.images)) throw new Error(`host ${hostId} listed no pre-pulled images`);
    return (r.images as unknown[]).slice(0, MAX_LISTED).flatMap((i): PreparedImage[] => {
      const p = i as Partial<Record<keyof PreparedImage, unknown>> | null;
      if (typeof p?.image !== 'string' || p.image === '' || p.image.length > 1024 || !isSize(p.sizeBytes)) return [];
      const accountId =
        typeof p.accountId === 'string' && p.accountId !== '' && p.accountId.length <= 64 ? p.accountId : null;
      return [{ image: p.image, sizeBytes: p.sizeBytes, pulledAt: isSize(p.pulledAt) ? p.pulledAt : 0, accountId }];
    });
  }

  async discard(hostId: string, image: string): Promise<'removed' | 'in-use' | 'absent'> {
    const r = (await this.#ask(hostId, { kind: 'discardImage', image }, image, this.#waits.other)) as
      Partial<Record<string, unknown>> | undefined;
    const outcome = r?.outcome;
    if (outcome !== 'removed' && outcome !== 'in-use' && outcome !== 'absent')
      throw new Error(`host ${hostId} acknowledged the removal of "${image}" without saying what it did`);
    return outcome;
  }

  async #ask(hostId: string, op: ImageOp, image: string, waitMs: number): Promise<OperationResult | undefined> {
    const away = whyRevoked(this.#ledger, hostId) ?? hostAway(this.#ledger.table.knownHost(hostId));
    if (away !== null) throw new Error(`nothing sent to host ${hostId} (${op.kind}): ${away}`);
    if (this.#unable.has(hostId)) throw tooOld(hostId, null);
    const key = `${op.kind}\0${hostId}\0${image}`;
    let acked = this.#pending.get(key);
    if (!acked) {
      const sent = this.#enqueue(hostId, op);
      this.#pending.set(key, sent);
      acked = sent;
      sent.finally(() => this.#pending.get(key) === sent && this.#pending.delete(key)).catch(() => undefined);
    }
    let ceiling: NodeJS.Timeout | undefined;
    const ack = await Promise.race([
      acked,
      new Promise<never>((_, reject) => {
        ceiling = setTimeout(
          () =>
            reject(
              new Error(
                `host ${hostId} did not acknowledge the ${op.kind}${image ? ` of "${image}"` : ''} within ${waitMs} ms; its agent applies it when it gets to it`,
              ),
            ),
          waitMs,
        );
        ceiling.unref();
      }),
    ]).finally(() => clearTimeout(ceiling));
    if (ack.ok) return ack.result;
    const error = hideHostPaths((ack.error ?? '').slice(0, MAX_REASON));
    if (/unknown operation kind/i.test(error)) {
      if (!this.#unable.has(hostId))
        this.#ledger.deps.logger.warn(
          { hostId, op: op.kind },
          "the host's agent predates pre-pulled images: update gantry agent there",
        );
      this.#unable.add(hostId);
      throw tooOld(hostId, error);
    }
    throw new Error(`host ${hostId} could not ${op.kind}${image ? ` "${image}"` : ''}: ${error || 'no reason given'}`);
  }

  /** Queues the operation; resolves on its ack (applied with the host's acks, fleet-ledger.ts). */
  async #enqueue(hostId: string, op: ImageOp): Promise<OperationAck> {
    const sent = await this.#send(hostId, op).catch((err: unknown) => {
      throw new Error(`could not hand the ${op.kind} to host ${hostId}: ${(err as Error).message}`, { cause: err });
    });
    return new Promise<OperationAck>((resolve) =>
      this.#ledger.ops.set(sent.id, { kind: op.kind, hostId, instanceId: null, tracked: null, settle: resolve }),
    );
  }
}

const isSize = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

const tooOld = (hostId: string, said: string | null): Error =>
  new Error(
    `host ${hostId} cannot pre-pull images: its agent does not know the operation; update gantry agent on that host${said ? ` (it said: ${said})` : ''}`,
  );
