/**
 * The registry policy (domain/registry-policy.ts) applied to image references, with the DNS lookup
 * it needs; a reference by image ID is refused here too (domain/image-ref.ts `imageIdProblem`). Used where a tenant's image enters with runtime docker (pod create and change,
 * template create and change: REST and GraphQL), and again by the Docker runtime before a pull.
 *
 * A host name is resolved with a short timeout; one that does not resolve in time, or at all, is
 * not refused (the pull fails with its own reason). The engine resolves the name again when it
 * pulls, so a name whose DNS answers differently then (DNS rebinding) passes this check: the
 * real guarantee is the engine host's own egress rules (docs/security.md).
 */
import { lookup } from 'node:dns/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiError } from '../domain/errors.js';
import { imageIdProblem, registryOfImage } from '../domain/image-ref.js';
import {
  DEFAULT_REGISTRY_POLICY,
  judgeRegistry,
  judgeResolved,
  type RegistryPolicyConfig,
} from '../domain/registry-policy.js';

/** Resolves a host name to every address it has (text form). */
export type ResolveAddresses = (hostname: string) => Promise<readonly string[]>;

export interface RegistryGuardDeps {
  /** @default DEFAULT_REGISTRY_POLICY: any public registry; private ones refused */
  policy?: RegistryPolicyConfig;
  /** @default the system resolver (dns.lookup, all addresses: what the engine's own lookup reads too, /etc/hosts included) */
  resolve?: ResolveAddresses;
  /** How long a lookup may take before the name counts as not resolving. @default 2000 */
  resolveTimeoutMs?: number;
  /** Waits `ms` or until `signal` aborts. @default a timer */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
}

const systemResolve: ResolveAddresses = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);
const timer = (ms: number, signal: AbortSignal): Promise<void> =>
  delay(ms, undefined, { signal, ref: false }).catch(() => undefined);

export class RegistryGuard {
  readonly #policy: RegistryPolicyConfig;
  readonly #resolve: ResolveAddresses;
  readonly #timeoutMs: number;
  readonly #wait: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(deps: RegistryGuardDeps = {}) {
    this.#policy = deps.policy ?? DEFAULT_REGISTRY_POLICY;
    this.#resolve = deps.resolve ?? systemResolve;
    this.#timeoutMs = deps.resolveTimeoutMs ?? 2_000;
    this.#wait = deps.wait ?? timer;
  }

  /**
   * Why the engine may not pull `image`, as a sentence naming its registry and what an operator
   * can set (or saying that it names an image by ID, which no registry is asked about), or null
   * when it may.
   */
  async refusal(image: string): Promise<string | null> {
    const byId = imageIdProblem(image);
    if (byId !== null) return byId;
    const registry = registryOfImage(image);
    let judged = judgeRegistry(registry, this.#policy);
    if (judged.verdict === 'resolve') judged = judgeResolved(registry, await this.#addresses(judged.host));
    if (judged.verdict !== 'refused') return null;
    return `its registry ${judged.reason}; ${judged.fix}`;
  }

  /** The host's addresses; none when it does not resolve, or not within the timeout. */
  async #addresses(host: string): Promise<readonly string[]> {
    const abort = new AbortController();
    try {
      // null: no answer in time
      const found = await Promise.race([
        this.#resolve(host),
        this.#wait(this.#timeoutMs, abort.signal).then(() => null),
      ]);
      return found ?? [];
    } catch {
      return [];
    } finally {
      abort.abort();
    }
  }
}

/**
 * Refuses, with 400 IMAGE_NOT_ALLOWED, an image whose registry the guard refuses. Without a guard
 * (a runtime that never pulls: the process runtime) every image passes.
 */
export async function assertImageAllowed(
  guard: Pick<RegistryGuard, 'refusal'> | null | undefined,
  image: string,
  field = 'image',
): Promise<void> {
  const refusal = guard ? await guard.refusal(image) : null;
  if (refusal === null) return;
  throw new ApiError('IMAGE_NOT_ALLOWED', `${field} is not allowed: ${refusal}.`, { errors: [`${field}: ${refusal}`] });
}
