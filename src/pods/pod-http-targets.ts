/**
 * What the pod HTTP proxy (src/proxy/, docs/proxy.md) reaches for a name: the pod and port a
 * `{podId}-{port}-{token}` label stands for, when that port is one of the pod's `<port>/http` ports
 * and the pod runs. Everything else is one refusal with a sentence the caller can act on; a name
 * this installation did not make is refused like a pod that does not exist, so nothing about other
 * pods can be learned by guessing.
 */
import { ApiError } from '../domain/errors.js';
import type { PodRecord } from '../store/pod-record.js';
import type { PodProxyNames } from './pod-proxy-names.js';

export interface PodHttpTarget {
  podId: string;
  accountId: string;
  /** the pod's own port (the `<port>` of `<port>/http`) */
  port: number;
  hostId: string | null;
}

export interface PodHttpTargetsDeps {
  pods: { get(id: string): Promise<PodRecord | null> };
  /** Whether the account still exists (a deleted account's pods are not reached). */
  accountExists(accountId: string): Promise<boolean>;
  names: PodProxyNames;
  /** ms epoch, for how long an account found is remembered */
  now(): number;
}

/** An account found is not looked up again for this long (a request must not cost a read of it). */
const ACCOUNT_MEMORY_MS = 10_000;

const unknownName = (): ApiError =>
  new ApiError(
    'NOT_FOUND',
    'No pod port answers at this address: the name is not one of a pod of this installation (a pod shows its proxy URLs in `httpProxy`).',
  );

export class PodHttpTargets {
  readonly #d: PodHttpTargetsDeps;
  /** account id → until when it is known to exist */
  readonly #accounts = new Map<string, number>();

  constructor(deps: PodHttpTargetsDeps) {
    this.#d = deps;
  }

  /** The proxy label of the pod's port (`{podId}-{port}-{token}`). */
  label(podId: string, port: number): string {
    return this.#d.names.label(podId, port);
  }

  /** A pass for `label` until `expiresAt` (pod-proxy-names.ts): the link's ticket, or the cookie's session. */
  pass(purpose: 'ticket' | 'session', label: string, expiresAt: number): string {
    return this.#d.names.pass(purpose, label, expiresAt);
  }

  /** Whether `pass` is a live pass of `purpose` for `label`. */
  checkPass(purpose: 'ticket' | 'session', label: string, pass: string): boolean {
    return this.#d.names.checkPass(purpose, label, pass, this.#d.now());
  }

  /** The target `label` names; throws 404 NOT_FOUND or 502 UPSTREAM_UNAVAILABLE with why not. */
  async resolve(label: string): Promise<PodHttpTarget> {
    const name = this.#d.names.parse(label);
    if (!name) throw unknownName();
    const pod = await this.#d.pods.get(name.podId);
    if (!pod || pod.status === 'TERMINATED') throw new ApiError('NOT_FOUND', `Pod "${name.podId}" no longer exists.`);
    if (!(await this.#accountExists(pod.accountId)))
      throw new ApiError('NOT_FOUND', `Pod "${name.podId}" no longer exists: its account was deleted.`);
    if (!pod.ports.includes(`${name.port}/http`)) {
      const http = pod.ports.filter((p) => p.endsWith('/http'));
      throw new ApiError(
        'NOT_FOUND',
        `Port ${name.port} of pod "${pod.id}" is not exposed over HTTP (its HTTP ports: ${http.join(', ') || 'none'}); add "${name.port}/http" to the pod's ports to reach it here.`,
      );
    }
    if (pod.status !== 'RUNNING')
      throw new ApiError(
        'UPSTREAM_UNAVAILABLE',
        `Pod "${pod.id}" is ${pod.status}: nothing answers on its port ${name.port} until it runs.`,
        { headers: { 'retry-after': '5' } },
      );
    return { podId: pod.id, accountId: pod.accountId, port: name.port, hostId: pod.hostId };
  }

  async #accountExists(accountId: string): Promise<boolean> {
    const now = this.#d.now();
    if ((this.#accounts.get(accountId) ?? 0) > now) return true;
    if (!(await this.#d.accountExists(accountId))) return false;
    if (this.#accounts.size > 10_000) this.#accounts.clear();
    this.#accounts.set(accountId, now + ACCOUNT_MEMORY_MS);
    return true;
  }
}
