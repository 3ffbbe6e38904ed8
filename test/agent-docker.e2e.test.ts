/**
 * `gantry agent` on the real Docker Engine (DOCKER_HOST): it starts a container from a start
 * operation and reports it running; killed with SIGKILL and started again on the same data dir,
 * it adopts the container as it runs (same container, same StartedAt, same process) and lists it
 * in its first, full report; stopped, it is reported kept (its container kept), in the first full
 * report of a restarted agent too, until a remove. The control plane is test/support/agent-protocol-server.ts, a seam
 * standing in for the /agent/v1 routes until they land.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { containerNameOf } from '../src/runtime/docker/docker-names.js';
import type { InstanceSpec } from '../src/runtime/runtime.js';
import { AgentProtocolServer } from './support/agent-protocol-server.js';
import { dockerEngine, instanceInfo, noEngine, removeNamespace, uniqueNamespace } from './support/docker.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';

const engine = await dockerEngine();
const namespace = uniqueNamespace();
const dataDir = mkdtempSync(join(tmpdir(), 'gantry-agent-e2e-'));
const server = await AgentProtocolServer.start();
const agents: SpawnedAgent[] = [];
after(async () => {
  await Promise.all(agents.map((a) => a.stop('SIGKILL')));
  await server.close();
  if (engine) await removeNamespace(engine.client, namespace);
  rmSync(dataDir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The instance's /info once its server listens (the agent runs no health probe: the images map is the control plane's). */
async function infoWhenUp(port: number): Promise<Awaited<ReturnType<typeof instanceInfo>>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await instanceInfo(port);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const isFull = (r: { body: { instances?: { full: boolean } } }): boolean => r.body.instances?.full === true;

function startAgent(token?: string): SpawnedAgent {
  const args = [
    '--server',
    server.url,
    '--data-dir',
    dataDir,
    '--namespace',
    namespace,
    '--public-ip',
    '127.0.0.1',
    ...(token ? ['--token', token] : []),
  ];
  const agent = spawnAgent(args, { DOCKER_HOST: engine!.dockerHost });
  agents.push(agent);
  return agent;
}

test(
  'the agent starts a container from a start operation, adopts it without restarting it after a kill -9, and reports it kept once stopped, after a restart too, until its remove',
  { skip: engine ? false : noEngine() },
  async () => {
    const e = engine!;
    startAgent(server.token());
    const joined = await server.report(() => true, 'after the join');
    const hostId = joined.hostId;
    const port = await freePort();
    const spec: InstanceSpec = {
      id: 'pod-agent-e2e',
      owner: { kind: 'pod', accountId: 'acct-e2e' },
      image: e.images.http,
      args: '',
      env: { GREETING: 'hello' },
      platformEnv: { RUNPOD_POD_ID: 'pod-agent-e2e' },
      hostId,
      gpuIndices: [],
      vcpus: 1,
      memoryGb: 0.5,
      diskGb: 0,
      ports: [{ private: 8000, public: port, protocol: 'http' }],
      volumes: [],
    };
    const op = server.enqueue(hostId, { kind: 'start', instanceId: spec.id, spec });
    const acked = await server.report(
      (r) => (r.body.acks ?? []).some((a) => a.opId === op.id),
      'acknowledging the start',
      120_000,
    );
    assert.deepEqual(
      acked.body.acks?.find((a) => a.opId === op.id),
      { opId: op.id, ok: true },
    );
    const running = await server.report(
      (r) => (r.body.instances?.items ?? []).some((i) => i.id === spec.id && i.state === 'running'),
      'of the instance running',
    );
    assert.deepEqual(running.body.instances?.items.find((i) => i.id === spec.id)?.owner, spec.owner);
    const before = await e.client.inspectContainer(containerNameOf(namespace, spec.id));
    assert.ok(before?.State.Running, 'the container runs');
    const boot = await infoWhenUp(port);
    assert.equal(boot.env.GREETING, 'hello', 'its published port answers on 127.0.0.1');

    const killed = await agents[0]!.stop('SIGKILL');
    assert.equal(killed.signal, 'SIGKILL');
    assert.ok((await e.client.inspectContainer(before.Id))?.State.Running, 'the container outlives its agent');

    const reportsBefore = server.reports.length;
    startAgent();
    const first = await server.report((_r, i) => i >= reportsBefore, 'from the restarted agent');
    assert.equal(first.hostId, hostId, 'the stored credential is used');
    assert.equal(first.body.instances?.full, true);
    assert.deepEqual(
      first.body.instances?.items.map((i) => [i.id, i.state, i.owner]),
      [[spec.id, 'running', spec.owner]],
      'the adopted container is in the first, full report',
    );
    const after_ = await e.client.inspectContainer(containerNameOf(namespace, spec.id));
    assert.equal(after_?.Id, before.Id, 'the same container');
    assert.equal(after_?.State.StartedAt, before.State.StartedAt, 'not restarted');
    assert.equal((await instanceInfo(port)).bootId, boot.bootId, 'the same process serves its port');

    // Stopped: its container is kept, and so is it in the reports, full ones included.
    const kept = {
      id: spec.id,
      owner: spec.owner,
      state: 'exited',
      startedAt: null,
      exitCode: null,
      reason: null,
      kept: true,
    };
    const stopOp = server.enqueue(hostId, { kind: 'stop', instanceId: spec.id });
    const stopped = await server.report(
      (r) => (r.body.acks ?? []).some((a) => a.opId === stopOp.id && a.ok),
      'acknowledging the stop',
      60_000,
    );
    assert.deepEqual(
      stopped.body.instances?.items.filter((i) => i.id === spec.id),
      [kept],
      'the report acknowledging the stop shows it kept',
    );
    const stoppedContainer = await e.client.inspectContainer(before.Id);
    assert.equal(stoppedContainer?.State.Running, false, 'the container is stopped and kept');
    assert.equal((await agents[1]!.stop('SIGTERM')).code, 0);

    const reportsBeforeThird = server.reports.length;
    startAgent();
    const third = await server.report(
      (_r, i) => i >= reportsBeforeThird,
      'from the agent restarted over the kept container',
    );
    assert.equal(third.body.instances?.full, true);
    assert.deepEqual(
      third.body.instances?.items,
      [kept],
      'the kept instance is in the first, full report after a restart',
    );

    const removeOp = server.enqueue(hostId, { kind: 'remove', instanceId: spec.id });
    const removed = await server.report(
      (r) => (r.body.acks ?? []).some((a) => a.opId === removeOp.id && a.ok),
      'acknowledging the remove',
    );
    assert.equal(
      removed.body.instances?.items.some((i) => i.id === spec.id) ?? false,
      false,
      'a removed instance is no longer listed',
    );
    assert.equal(await e.client.inspectContainer(before.Id), null, 'removed by the remove operation');
    const reportsBeforeLast = server.reports.length;
    assert.equal((await agents[2]!.stop('SIGTERM')).code, 0);
    startAgent();
    const last = await server.report((_r, i) => i >= reportsBeforeLast && isFull(_r), 'a full report after the remove');
    assert.deepEqual(last.body.instances?.items, [], 'nor in a full report');
    assert.equal((await agents[3]!.stop('SIGTERM')).code, 0);
  },
);
