import type { Clock } from '../domain/clock.js';
import type { Inventory } from '../inventory/inventory.js';
import type { InstanceStatus, Runtime } from '../runtime/runtime.js';
import type { PodRecord } from '../store/pod-record.js';
import { toPodView, type PodHttpUrl, type PodView, type SshProxyAddress } from './pod-view.js';

export interface PodViewsDeps {
  runtime: Pick<Runtime, 'inspect'>;
  hosts: Pick<Inventory, 'host'>;
  clock: Clock;
  config: { networking: { internalDomain: string }; ssh?: SshProxyAddress | undefined };
  /** The pod HTTP proxy's URL of a pod's port (pod-http-urls.ts). @default none */
  httpUrl?: PodHttpUrl | null;
}

/**
 * Stored pods rendered as the pod routes answer them, with their instance's live state. Views of
 * unchanged records are reused within the same second while the instance's state and
 * utilisation are unchanged (uptime has one-second resolution). Keyed by the record object, so a
 * write (which replaces the cached record) or an uncached read never hits.
 */
export class PodViews {
  readonly #deps: PodViewsDeps;
  readonly #cache = new WeakMap<PodRecord, { key: string; view: PodView }>();

  constructor(deps: PodViewsDeps) {
    this.#deps = deps;
  }

  /** The pod's view, its instance inspected when it is RUNNING. */
  async render(pod: PodRecord): Promise<PodView> {
    const live = pod.status === 'RUNNING' ? await this.#deps.runtime.inspect(pod.id) : null;
    const stats = live?.stats;
    const gpus = stats?.gpus?.map((g) => `${g.util}:${g.memoryUtil}`).join(',') ?? '';
    const key = `${Math.floor(this.#deps.clock.now() / 1000)}|${live?.state ?? ''}|${stats?.cpuUtil ?? ''}|${stats?.memoryUtil ?? ''}|${gpus}`;
    const hit = this.#cache.get(pod);
    if (hit && hit.key === key) return hit.view;
    const view = this.view(pod, { live, justCreated: false });
    if (Object.isFrozen(pod)) this.#cache.set(pod, { key, view: Object.freeze(view) });
    return view;
  }

  /** The pod's view with what is known of its instance (`justCreated`: the answer to its create). */
  view(pod: PodRecord, extra: { live: InstanceStatus | null; justCreated: boolean }): PodView {
    const { config } = this.#deps;
    return toPodView(pod, {
      now: this.#deps.clock.now(),
      hostIp: pod.hostId ? (this.#deps.hosts.host(pod.hostId)?.publicIp ?? null) : null,
      live: extra.live,
      internalDomain: config.networking.internalDomain,
      sshProxy: config.ssh?.listening ? config.ssh : null,
      httpUrl: this.#deps.httpUrl ?? null,
      justCreated: extra.justCreated,
    });
  }
}
