/**
 * The control plane's tunnels per host (fleet-tunnels.ts) over real loopback connections: the
 * agent's side is a TunnelMux answering opens, the agent's own (agent-tunnels.ts) over a runtime
 * whose `connect` is a loopback connection, or raw bytes a hostile agent sends; the dial-back is
 * handed over directly (fleet-streams tests the real one, test/fleet-proxy.e2e.test.ts the whole
 * path with a real agent).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { until } from '../../test/support/eventually.js';
import { Registry } from 'prom-client';
import { AgentTunnels, agentTunnelLimits } from '../agent/agent-tunnels.js';
import { registerSourceGauges, type MetricsSources } from '../metrics/source-gauges.js';
import { DialTimeout } from '../runtime/dial.js';
import { FleetTunnels } from './fleet-tunnels.js';
import type { AgentTunnelLimits } from './protocol.js';
import { TUNNEL_FRAME, encodeTunnelFrame } from './tunnel-frames.js';
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
  assert.deepEqual(tunnels.open, { tunnels: 1, streams: 20, protocolErrors: {} });
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

test("configured bounds are kept: the control plane's streams per tunnel, and the agent's tunnels and dials at once, handed to it with the tunnel", async () => {
  const limitsSeen: AgentTunnelLimits[] = [];
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  // the agent's real side (agent-tunnels.ts); a dial to port 1 waits until released
  const agentTunnels = new AgentTunnels({
    runtime: {
      connect: async (_id: string, port: number) => {
        if (port === 1) await held;
        const [mine] = await socketPair();
        return mine;
      },
    },
    logger: silent,
  });
  const tunnels = new FleetTunnels({
    dialBack: async (_hostId, _signal, limits) => {
      limitsSeen.push(limits);
      const asked = agentTunnelLimits(limits);
      assert.equal(agentTunnels.refusal(asked), null);
      const [control, agent] = await socketPair();
      agentTunnels.carry(agent, Buffer.alloc(0), asked);
      return { socket: control, head: Buffer.alloc(0) };
    },
    logger: silent,
    config: { maxStreams: 3, maxTunnelsPerAgent: 1, maxDialing: 1, maxWindowBytes: 1024 * 1024 },
  });
  const waiting = tunnels.connect('host-a', { instanceId: 'pod-1', port: 1 }, 10_000);
  await until('the tunnel is open', async () => tunnels.open.tunnels === 1);
  assert.deepEqual(limitsSeen, [{ maxStreams: 3, maxTunnels: 1, maxDialing: 1, maxWindow: 1024 * 1024 }]);
  // the agent: one dial at once (the first waits), one tunnel held
  await assert.rejects(
    tunnels.connect('host-a', { instanceId: 'pod-1', port: 2 }, 10_000),
    /already opening 1 connections/,
  );
  assert.match(String(agentTunnels.refusal(agentTunnelLimits(limitsSeen[0]))), /already holds 1 tunnels/);
  release();
  (await waiting).on('error', () => undefined);
  await connectTo(tunnels, 'host-a', 'pod-1');
  await connectTo(tunnels, 'host-a', 'pod-1');
  // the control plane: three streams on the tunnel at once
  await assert.rejects(connectTo(tunnels, 'host-a', 'pod-1'), /already carries 3 streams/);
  tunnels.close();
  agentTunnels.close();
});

test('an agent breaking the protocol ends its tunnel and counts in gantry_fleet_tunnel_protocol_errors_total by why', async () => {
  let raw: Socket | null = null;
  const tunnels = new FleetTunnels({
    dialBack: async () => {
      const [control, agent] = await socketPair();
      raw = agent;
      agent.on('error', () => undefined);
      return { socket: control, head: Buffer.alloc(0) };
    },
    logger: silent,
  });
  const registry = new Registry();
  const sources: MetricsSources = {
    workers: () => ({}),
    decisions: () => ({ passes: 0, starts: 0, stops: {}, heldBack: 0, throttled: 0 }),
    gpus: () => [],
    webhooks: () => ({ delivered: 0, retrying: 0, failed: 0, inFlight: 0 }),
    tunnels: () => tunnels.open,
  };
  registerSourceGauges([registry], () => sources);
  const opening = tunnels.connect('host-a', { instanceId: 'pod-1', port: 8000 }, 10_000);
  opening.catch(() => undefined);
  await until('the tunnel is open', async () => raw !== null && tunnels.open.tunnels === 1);
  // a hostile agent: data on a stream that was never opened
  raw!.write(encodeTunnelFrame(TUNNEL_FRAME.data, 77, Buffer.from('not yours')));
  await assert.rejects(opening, /protocol/);
  assert.deepEqual(tunnels.open.protocolErrors, { stream: 1 });
  const text = await registry.metrics();
  assert.match(text, /gantry_fleet_tunnel_protocol_errors_total\{reason="stream"\} 1/);
  assert.match(text, /gantry_fleet_tunnel_protocol_errors_total\{reason="credit"\} 0/);
  // the next agent sends bytes that are no frame
  raw = null;
  const next = tunnels.connect('host-a', { instanceId: 'pod-1', port: 8000 }, 10_000);
  next.catch(() => undefined);
  await until('a new tunnel is open', async () => raw !== null && tunnels.open.tunnels === 1);
  raw!.write('HTTP/1.1 200 OK\r\n\r\n');
  await assert.rejects(next, /protocol/);
  assert.deepEqual(tunnels.open.protocolErrors, { stream: 1, malformed: 1 });
  assert.match(await registry.metrics(), /gantry_fleet_tunnel_protocol_errors_total\{reason="malformed"\} 1/);
  tunnels.close();
});
