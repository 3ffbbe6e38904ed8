/**
 * The control plane's tunnels per host (fleet-tunnels.ts) over real loopback connections: the
 * agent's side is a TunnelMux answering opens; the dial-back is handed over directly (fleet-streams
 * tests the real one, test/fleet-proxy.e2e.test.ts the whole path with a real agent).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { until } from '../../test/support/eventually.js';
import { DialTimeout } from '../runtime/dial.js';
import { FleetTunnels } from './fleet-tunnels.js';
import { TunnelMux } from './tunnel-mux.js';

const silent = { info: () => undefined, warn: () => undefined };
const servers: Server[] = [];
after(() => servers.forEach((s) => s.close()));

async function socketPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  await new Promise((resolve) => client.once('connect', resolve));
  return [client, await accepted];
}

/** An agent's side: each dial-back is a new tunnel whose opens are answered `opened`. */
function agentSide() {
  const tunnels: TunnelMux[] = [];
  const dialBacks: string[] = [];
  const dialBack = async (hostId: string): Promise<{ socket: Duplex; head: Buffer }> => {
    dialBacks.push(hostId);
    const [control, agent] = await socketPair();
    const mux: TunnelMux = new TunnelMux(agent, Buffer.alloc(0), {
      side: 'agent',
      accept: (stream) => {
        stream.on('error', () => undefined);
        mux.opened(stream);
      },
    });
    tunnels.push(mux);
    return { socket: control, head: Buffer.alloc(0) };
  };
  return { tunnels, dialBacks, dialBack };
}

/** A connection, its errors listened to as the proxy does (closing the tunnels ends it with one). */
async function connectTo(
  tunnels: FleetTunnels,
  hostId: string,
  instanceId: string,
  timeoutMs = 10_000,
): Promise<Duplex> {
  const stream = await tunnels.connect(hostId, { instanceId, port: 8000 }, timeoutMs);
  stream.on('error', () => undefined);
  return stream;
}

test('connections to one host share its one tunnel, asked for once', async () => {
  const agent = agentSide();
  const tunnels = new FleetTunnels({ dialBack: agent.dialBack, logger: silent });
  const streams = await Promise.all(Array.from({ length: 20 }, (_, i) => connectTo(tunnels, 'host-a', `pod-${i}`)));
  assert.equal(agent.dialBacks.length, 1);
  assert.deepEqual(tunnels.open, { tunnels: 1, streams: 20 });
  for (const s of streams) s.destroy();
  await until('the streams are gone', async () => tunnels.open.streams === 0);
  await connectTo(tunnels, 'host-a', 'pod-x');
  assert.equal(agent.dialBacks.length, 1, 'the tunnel is kept and reused');
  tunnels.close();
});

test('a tunnel that cannot be had within the timeout is a dial timeout', async () => {
  const tunnels = new FleetTunnels({ dialBack: () => new Promise(() => undefined), logger: silent });
  await assert.rejects(
    tunnels.connect('host-a', { instanceId: 'pod-1', port: 8000 }, 150),
    (err: Error) => err instanceof DialTimeout && /opened no tunnel within 150 ms/.test(err.message),
  );
  tunnels.close();
});

test('a tunnel that drops ends its streams with an error, and the next connection asks for a new one', async () => {
  const agent = agentSide();
  const tunnels = new FleetTunnels({ dialBack: agent.dialBack, logger: silent });
  const stream = await connectTo(tunnels, 'host-a', 'pod-1');
  const failed = new Promise<Error>((resolve) => stream.once('error', resolve));
  agent.tunnels[0]!.close();
  assert.match((await failed).message, /tunnel/);
  await until('the tunnel is forgotten', async () => tunnels.open.tunnels === 0);
  await connectTo(tunnels, 'host-a', 'pod-1');
  assert.equal(agent.dialBacks.length, 2);
  tunnels.close();
});

test('an idle tunnel is closed after the idle time, and a later connection asks again', async () => {
  const agent = agentSide();
  const tunnels = new FleetTunnels({ dialBack: agent.dialBack, logger: silent, config: { idleMs: 150 } });
  const stream = await connectTo(tunnels, 'host-a', 'pod-1');
  stream.destroy();
  await until('the idle tunnel closed', async () => agent.tunnels[0]!.closed);
  await connectTo(tunnels, 'host-a', 'pod-1');
  assert.equal(agent.dialBacks.length, 2);
  tunnels.close();
});

test("each host has its own tunnel: one host's agent never carries another's connections", async () => {
  const agent = agentSide();
  const tunnels = new FleetTunnels({ dialBack: agent.dialBack, logger: silent });
  await connectTo(tunnels, 'host-a', 'pod-1');
  await connectTo(tunnels, 'host-b', 'pod-2');
  assert.deepEqual(agent.dialBacks, ['host-a', 'host-b']);
  assert.deepEqual(
    agent.tunnels.map((t) => t.streams),
    [1, 1],
  );
  tunnels.close();
});
