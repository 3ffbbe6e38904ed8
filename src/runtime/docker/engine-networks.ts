/** The Engine API's network calls: create a bridge, inspect, connect and disconnect a container, remove, list. */
import { enc, gone, orNull, short, type EngineCalls, type Filters } from './engine-calls.js';
import type { EndpointSettings, Labels, NetworkInspect } from './engine-types.js';

export interface NetworkOptions {
  /** exactly this IPv4 range (the engine picks one otherwise) */
  subnet?: string;
  /** the bridge interface's name */
  bridge?: string;
}

/**
 * A bridge network; with `subnet`, on exactly that IPv4 range (the engine picks one otherwise),
 * and with `bridge`, under that interface name.
 */
export async function createNetwork(
  calls: EngineCalls,
  name: string,
  labels: Labels,
  options: NetworkOptions = {},
): Promise<{ Id: string }> {
  const body = {
    Name: name,
    Driver: 'bridge',
    CheckDuplicate: true,
    Labels: labels,
    ...(options.subnet ? { IPAM: { Driver: 'default', Config: [{ Subnet: options.subnet }] } } : {}),
    ...(options.bridge ? { Options: { 'com.docker.network.bridge.name': options.bridge } } : {}),
  };
  return (
    await calls.conn.json<{ Id: string }>({
      method: 'POST',
      path: '/networks/create',
      body,
      doing: `creating network "${name}"`,
    })
  ).body;
}

export async function inspectNetwork(calls: EngineCalls, name: string): Promise<NetworkInspect | null> {
  return orNull(
    calls.conn.json<NetworkInspect>({
      method: 'GET',
      path: `/networks/${enc(name)}`,
      doing: `inspecting network "${name}"`,
    }),
  );
}

export async function connectNetwork(
  calls: EngineCalls,
  network: string,
  containerId: string,
  endpoint: EndpointSettings = {},
): Promise<void> {
  await calls.conn.json({
    method: 'POST',
    path: `/networks/${enc(network)}/connect`,
    body: { Container: containerId, EndpointConfig: endpoint },
    doing: `connecting container ${short(containerId)} to network "${network}"`,
  });
}

/** Takes a (running) container off a network; `force` even when the engine would refuse. */
export async function disconnectNetwork(
  calls: EngineCalls,
  network: string,
  containerId: string,
  force = false,
): Promise<void> {
  await calls.conn.json({
    method: 'POST',
    path: `/networks/${enc(network)}/disconnect`,
    body: { Container: containerId, Force: force },
    doing: `disconnecting container ${short(containerId)} from network "${network}"`,
  });
}

export async function removeNetwork(calls: EngineCalls, name: string): Promise<boolean> {
  return gone(
    calls.conn.json({ method: 'DELETE', path: `/networks/${enc(name)}`, doing: `removing network "${name}"` }),
  );
}

export async function listNetworks(calls: EngineCalls, filters: Filters): Promise<NetworkInspect[]> {
  return (
    await calls.conn.json<NetworkInspect[]>({
      method: 'GET',
      path: '/networks',
      query: { filters: JSON.stringify(filters) },
      doing: 'listing networks',
    })
  ).body;
}
