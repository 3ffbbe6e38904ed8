/**
 * A container's output on a fleet host, followed by many readers on the control plane: the
 * control plane's FleetRuntime and FleetStreams over a real HTTP server, the agent's StreamDialer
 * and DockerRuntime on a real engine (behind a socket proxy that counts its connections), and an
 * in-process stand-in for the rest of the agent (test/support/loopback-agent.ts) to start the
 * container. However many read it, the control plane asks the agent for one stream of it and the
 * agent holds one Engine API follow of it.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { StreamDialer, type StreamOperation } from '../agent/stream-dialer.js';
import { systemClock } from '../domain/clock.js';
import { ChangeRecorder, instanceSpec, waitFor } from '../runtime/runtime-contract.js';
import { DOCKER_HOST, dockerEngine, makeDockerRuntime, noEngine } from '../../test/support/docker.js';
import { LoopbackAgent } from '../../test/support/loopback-agent.js';
import { UnixSocketProxy } from '../../test/support/socket-proxy.js';
import { FleetRuntime, type PlacedInstance } from './fleet-runtime.js';
import { FleetStreams } from './fleet-streams.js';
import type { NewOperation, Operation } from './protocol.js';

const engine = await dockerEngine();
after(() => engine?.client.close());
const CREDENTIAL = 'ghc_local_secret';
const silent = pino({ level: 'silent' });

if (!engine || !DOCKER_HOST.startsWith('unix://')) {
  test(
    'the fleet follows a container once however many read it',
    { skip: noEngine() || 'DOCKER_HOST is not a unix socket' },
    () => {},
  );
} else {
  const e = engine;
  test("many readers of a fleet host's container on the control plane share one stream from its agent and one Engine API follow on the host, each reading every line once, in order", async () => {
    const proxy = new UnixSocketProxy(DOCKER_HOST.slice('unix://'.length));
    await proxy.start();
    const docker = makeDockerRuntime(e, { dockerHost: `unix://${proxy.path}` });
    const agent = new LoopbackAgent('local', docker.runtime);
    const records = new Map<string, PlacedInstance>();
    let server: Server | null = null;
    let dialer: StreamDialer | null = null;
    let streams: FleetStreams | null = null;
    const fleet = new FleetRuntime({
      enqueue: (hostId: string, op: NewOperation) => {
        if (op.kind === 'start') records.set(op.instanceId, { hostId, owner: op.spec.owner });
        return agent.enqueue(hostId, op);
      },
      placements: {
        placed: async (ids) => new Map(ids.flatMap((id) => (records.has(id) ? [[id, records.get(id)!] as const] : []))),
      },
      clock: systemClock,
      logger: silent,
    });
    const followers: Array<{ got: number[]; stop: AbortController; done: Promise<void> }> = [];
    const engineFollows = () => proxy.openMatching(/\/logs\?.*follow=true/);
    /** The stream operations the control plane asked of the agent, follows among them. */
    const asked: Operation[] = [];
    try {
      await docker.runtime.attach();
      await agent.connect(fleet);
      server = createServer((_req, res) => res.end());
      server.on('upgrade', (req, socket, head) => {
        if (!streams!.handleUpgrade(req, socket, head)) socket.destroy();
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      dialer = new StreamDialer({
        runtime: docker.runtime,
        servers: () => [url],
        credential: CREDENTIAL,
        logger: silent,
      });
      streams = new FleetStreams({
        enqueue: async (hostId, op) => {
          const operation: Operation = { ...op, id: `stream-${asked.length}`, seq: asked.length };
          asked.push(operation);
          // The agent's poll, then its acknowledgement.
          void dialer!.open(operation as StreamOperation).then((r) =>
            streams!.acked([
              {
                opId: operation.id,
                hostId,
                seq: 0,
                kind: 'stream',
                instanceId: 'instanceId' in op ? op.instanceId : '',
                volumeId: null,
                ok: r.ok,
                error: r.error ?? null,
                at: 0,
              },
            ]),
          );
          return operation;
        },
        authenticate: async (credential) => {
          if (credential !== CREDENTIAL) throw new Error('wrong');
          return { hostId: 'local' };
        },
        logger: silent,
      });
      fleet.useStreams(streams);

      const changes = new ChangeRecorder(fleet);
      const spec = instanceSpec({
        hostId: 'local',
        image: e.images.idle,
        args: `/bin/sh -c "i=0; while :; do echo $i; i=$((i+1)); echo $i; i=$((i+1)); sleep 0.01; done"`,
      });
      await fleet.start(spec);
      await changes.next(spec.id, 'running', 30_000);
      for (let k = 0; k < 8; k++) {
        const stop = new AbortController();
        const got: number[] = [];
        const done = (async () => {
          for await (const l of fleet.output(spec.id, { follow: true, tail: 1 + (k % 3), signal: stop.signal }))
            got.push(Number(l.line));
        })();
        followers.push({ got, stop, done });
        await waitFor(`follower ${k} reads live lines`, () => got.length > 4, 30_000);
      }
      const last = Math.max(...followers.map((f) => f.got[f.got.length - 1]!)) + 20;
      await waitFor('every follower reads on', () => followers.every((f) => f.got.includes(last)), 30_000);
      const follows = asked.filter((op) => op.kind === 'stream' && op.request?.what === 'output' && op.request.follow);
      assert.equal(follows.length, 1, 'the control plane asked the agent for one follow');
      assert.equal(dialer.connected, 1, 'the agent holds one stream: the follow (the reads of kept lines ended)');
      assert.equal(engineFollows(), 1, 'the agent holds one Engine API follow');
      for (const [k, f] of followers.entries()) {
        const seen = f.got.slice(0, f.got.indexOf(last) + 1);
        assert.ok(
          seen.every((n, i) => i === 0 || n === seen[i - 1]! + 1),
          `follower ${k} read every line once, in order: ${seen.slice(0, 40).join(' ')}`,
        );
      }
      for (const f of followers) f.stop.abort();
      await Promise.all(followers.map((f) => f.done));
      await waitFor(
        'the stream and the engine follow are closed',
        () => dialer!.connected === 0 && engineFollows() === 0,
        30_000,
      );
    } finally {
      for (const f of followers) f.stop.abort();
      streams?.close();
      dialer?.close();
      server?.closeAllConnections();
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
      await fleet.close();
      await agent.disconnect();
      await docker.cleanup();
      await proxy.close();
    }
  });
}
