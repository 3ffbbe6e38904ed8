/**
 * The Docker runtime's `connect()` (runtime.ts): a TCP connection to a port inside a running
 * container, for the pod HTTP proxy. With a local engine the control plane sits beside the
 * container's bridge and dials the container's own address on its network, which skips the
 * engine's port publishing (and its userland proxy); a container on the host's network is dialled
 * on 127.0.0.1; with a remote engine, the port published on the engine's host.
 */
import type { Socket } from 'node:net';
import type { ConnectOptions } from '../runtime.js';
import { dialTcp } from '../dial.js';
import { isLocalEngine, parseDockerHost } from './engine-info.js';
import type { ContainerInspect } from './engine-types.js';

export interface ContainerDialTarget {
  /** the engine runs on this machine (a unix socket, or a TCP address of this machine) */
  localEngine: boolean;
  /** where a remote engine's published ports are reached */
  engineHost: string;
}

/** Where `port` of the container is reached from the control plane, or why it is not. */
export function containerAddress(
  inspect: ContainerInspect,
  port: number,
  target: ContainerDialTarget,
): { host: string; port: number } | { refused: string } {
  if (inspect.HostConfig.NetworkMode === 'host')
    return { host: target.localEngine ? '127.0.0.1' : target.engineHost, port };
  // Only the ports the instance was started with (each bound at its host): not any port its
  // address answers on, whoever asks (an agent's tunnel carries what the control plane names).
  if (!inspect.NetworkSettings?.Ports?.[`${port}/tcp`]?.some((b) => b.HostPort))
    return { refused: `port ${port} is not one of its ports` };
  if (target.localEngine) {
    const address = Object.values(inspect.NetworkSettings?.Networks ?? {}).find((n) => n.IPAddress)?.IPAddress;
    if (address) return { host: address, port };
  }
  const published = inspect.NetworkSettings?.Ports?.[`${port}/tcp`]?.find((b) => b.HostPort);
  if (!published) return { refused: `port ${port} is not published by its container` };
  const bound =
    published.HostIp && published.HostIp !== '0.0.0.0' && published.HostIp !== '::' ? published.HostIp : null;
  return { host: target.localEngine ? (bound ?? '127.0.0.1') : target.engineHost, port: Number(published.HostPort) };
}

/** Dials `port` of the container `inspect` describes. */
async function dialContainer(
  inspect: ContainerInspect,
  id: string,
  port: number,
  target: ContainerDialTarget,
  options: ConnectOptions,
): Promise<Socket> {
  const address = containerAddress(inspect, port, target);
  if ('refused' in address) throw new Error(`port ${port} of instance "${id}" cannot be reached: ${address.refused}`);
  return dialTcp(address.host, address.port, `port ${port} of instance "${id}"`, options);
}

/** Dials ports of the runtime's live containers, inspecting each container once per run (its address does not change while it runs). */
export class ContainerDialer {
  readonly #inspect: (containerId: string) => Promise<ContainerInspect | null>;
  readonly #target: ContainerDialTarget;
  /** per live instance (a new run is a new object): its inspect */
  readonly #seen = new WeakMap<object, Promise<ContainerInspect | null>>();

  constructor(inspect: (containerId: string) => Promise<ContainerInspect | null>, target: ContainerDialTarget) {
    this.#inspect = inspect;
    this.#target = target;
  }

  /** A dialer for the engine at `dockerHost` (`unix://…`, `tcp://host:port`). */
  static forEngine(
    dockerHost: string,
    inspect: (containerId: string) => Promise<ContainerInspect | null>,
  ): ContainerDialer {
    const engine = parseDockerHost(dockerHost);
    return new ContainerDialer(inspect, { localEngine: isLocalEngine(engine), engineHost: engine.host ?? '127.0.0.1' });
  }

  async dial(live: { id: string; containerId: string }, port: number, options: ConnectOptions): Promise<Socket> {
    let inspect = this.#seen.get(live);
    if (!inspect) {
      inspect = this.#inspect(live.containerId);
      this.#seen.set(live, inspect);
      inspect.catch(() => this.#seen.delete(live));
    }
    const found = await inspect;
    if (!found) throw new Error(`instance "${live.id}" is not running here`);
    return dialContainer(found, live.id, port, this.#target, options);
  }
}
