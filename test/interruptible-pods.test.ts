// Interruptible (spot) pods and the reclaim ladder (docs/pods.md) over in-process HTTP, on SQLite
// and PostgreSQL: spot pods rented with the mutation dstack and SkyPilot send, taken back for an
// on-demand pod or a higher bid, and what their owner sees afterwards over REST and GraphQL.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';
import { FakeRuntime } from './support/fake-runtime/fake-runtime.js';
import { FakeClock } from '../src/domain/clock.js';

const GPU = 'NVIDIA GeForce RTX 4090';
const HOUR = 3_600_000;
// One host of two RTX 4090s: two pods fill it.
const fleet = [
  { id: 'tx-1', dataCenterId: 'US-TX-3', gpuTypeId: GPU, gpuCount: 2, cudaVersion: '12.4', portRange: [20000, 20099] },
];

/** podRentInterruptable as SkyPilot's RunPod backend writes it (sky/provision/runpod/api/pods.py). */
const rentMutation = (bid: number, name: string) => /* GraphQL */ `
  mutation {
    podRentInterruptable(
      input: {
        name: "${name}", imageName: "ubuntu:22.04", gpuTypeId: "${GPU}", bidPerGpu: ${bid},
        volumeMountPath: "/runpod-volume", cloudType: SECURE, startSsh: true, supportPublicIp: true,
        gpuCount: 1, minMemoryInGb: 24, minVcpuCount: 4, containerDiskInGb: 10, volumeInGb: 0,
        ports: "22/tcp", dockerArgs: "sleep infinity", dataCenterId: "US-TX-3"
      }
    ) { id desiredStatus imageName env machineId machine { podHostId } }
  }`;

for (const { name: dialect, skip } of dialects()) {
  describe(`interruptible pods on ${dialect}`, { skip }, () => {
    let t: TestApp;
    let clock: FakeClock;
    const runtime = new FakeRuntime();
    let spot: { accountId: string; key: string };
    let other: { accountId: string; key: string };

    before(async () => {
      clock = new FakeClock(Date.parse('2026-07-01T10:00:00Z'));
      t = await createTestApp({
        dialect,
        clock,
        runtime,
        file: { rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 }, fleet },
      });
      spot = await t.newAccount('spot-owner');
      other = await t.newAccount('on-demand-owner');
    });
    after(() => t?.close());

    const gql = async (key: string, query: string, variables?: Record<string, unknown>) =>
      json<{ data?: any; errors?: Array<{ message: string; extensions: { code: string } }> }>(
        await t.request(key, 'POST', '/graphql', { query, ...(variables ? { variables } : {}) }),
      );
    const rent = async (key: string, bid: number, name: string): Promise<string> => {
      const res = await gql(key, rentMutation(bid, name));
      assert.equal(res.errors, undefined, JSON.stringify(res.errors));
      const id = res.data.podRentInterruptable.id as string;
      await t.services.podController.idle(id);
      return id;
    };
    const createOnDemand = async (key: string, name: string) => {
      const res = await t.request(key, 'POST', '/v2/pods', { name, image: 'ubuntu:22.04', gpu: { id: GPU } });
      assert.equal(res.statusCode, 201, res.body);
      return json<{ id: string }>(res).id;
    };
    const rest = async (key: string, path: string) => json(await t.request(key, 'GET', path));
    const terminate = async (key: string, id: string) =>
      assert.equal((await t.request(key, 'DELETE', `/v2/pods/${id}`)).statusCode, 204);

    test('an on-demand create on a full host interrupts the lowest-bid spot pod, whose owner sees it EXITED and unbilled', async () => {
      const cheap = await rent(spot.key, 0.4, 'cheap');
      const dear = await rent(spot.key, 0.5, 'dear');
      const before = await rest(spot.key, `/v2/pods/${cheap}`);
      assert.equal(before.status, 'RUNNING');
      assert.equal(before.interruptible, true);
      assert.equal(before.bidPerGpu, 0.4);
      assert.equal(before.cost, 0.4, 'an interruptible pod is billed at its bid');
      clock.advance(HOUR);

      // another account's on-demand pod finds the host full: the 0.4 bid gives way, not the 0.5 one
      const taker = await createOnDemand(other.key, 'taker');
      await t.services.podController.idle(cheap);
      await t.services.podController.idle(taker);
      assert.equal((await rest(other.key, `/v2/pods/${taker}`)).status, 'RUNNING');
      assert.equal((await rest(spot.key, `/v2/pods/${dear}`)).status, 'RUNNING');

      const after = await rest(spot.key, `/v2/pods/${cheap}`);
      assert.equal(after.status, 'EXITED');
      assert.match(after.statusReason, /^interrupted: its machine was taken back for an on-demand pod/);
      assert.equal(after.cost, 0);
      assert.deepEqual(after.actions, ['start', 'terminate']);
      // its container went (discarded), its volume was not removed
      assert.ok(runtime.discarded.includes(cheap));
      assert.ok(!runtime.removed.includes(cheap));

      const { data } = await gql(
        spot.key,
        `query($input: PodFilter) { pod(input: $input) { id desiredStatus podType costPerHr } }`,
        { input: { podId: cheap } },
      );
      assert.deepEqual(data.pod, { id: cheap, desiredStatus: 'EXITED', podType: 'INTERRUPTABLE', costPerHr: 0 });
      const v1 = await rest(spot.key, `/v1/pods/${cheap}`);
      assert.equal(v1.interruptible, true);
      assert.equal(v1.desiredStatus, 'EXITED');

      // billing: the hour it ran at its bid, and nothing after the interruption
      const billed = await t.services.pods.usage(spot.accountId, cheap);
      clock.advance(HOUR);
      const later = await t.services.pods.usage(spot.accountId, cheap);
      assert.equal(Math.round(billed.cost * 1000) / 1000, 0.4);
      assert.deepEqual(later, billed);
      const lines = (await t.services.systemLog.read(cheap)).map((r) => r.line);
      assert.ok(
        lines.some((l) => l.startsWith('interrupted: ')),
        lines.join('\n'),
      );

      await terminate(other.key, taker);
      await terminate(spot.key, dear);
      await terminate(spot.key, cheap);
    });

    test('an interrupted pod whose engine refuses the stop still ends EXITED and unbilled; the new pod waits, saying why, and starts once a retried stop discarded it', async () => {
      const stuck = await rent(spot.key, 0.4, 'stuck');
      const dear = await rent(spot.key, 0.5, 'dear');
      runtime.refuseStop.set(stuck, 'the engine refused: container is paused');
      const taker = await createOnDemand(other.key, 'taker');
      await t.services.podController.idle(stuck);
      await t.services.podController.idle(taker);

      const interrupted = await rest(spot.key, `/v2/pods/${stuck}`);
      assert.equal(interrupted.status, 'EXITED');
      assert.match(interrupted.statusReason, /^interrupted: /);
      assert.equal(interrupted.cost, 0);
      assert.equal((await runtime.inspect(stuck))?.state, 'running', 'the refused stop left the instance running');
      const waiting = await rest(other.key, `/v2/pods/${taker}`);
      assert.equal(waiting.status, 'PROVISIONING');
      assert.match(
        waiting.statusReason,
        new RegExp(`still held by interrupted pods whose instances could not be stopped: ${stuck}`),
      );
      assert.ok(!runtime.started.includes(taker), 'the new pod did not start beside the instance holding its GPUs');
      const restart = await t.request(spot.key, 'POST', `/v2/pods/${stuck}/action`, { action: 'start' });
      assert.equal(restart.statusCode, 409, restart.body);
      assert.match(json<{ detail: string }>(restart).detail, /was interrupted and its instance cannot be stopped yet/);

      // the next try (a sweep's, here asked for) stops it, discarding its container, and the new pod starts
      runtime.refuseStop.delete(stuck);
      t.services.podController.kick(taker);
      await t.services.podController.idle(taker);
      assert.equal(await runtime.inspect(stuck), null);
      assert.ok(runtime.discarded.includes(stuck));
      const started = await rest(other.key, `/v2/pods/${taker}`);
      assert.equal(started.status, 'RUNNING');
      assert.equal(started.statusReason ?? null, null);
      assert.equal((await rest(spot.key, `/v2/pods/${stuck}`)).status, 'EXITED');

      await terminate(other.key, taker);
      await terminate(spot.key, dear);
      await terminate(spot.key, stuck);
    });

    test('a higher bid takes the machine of a lower one; an equal bid finds no capacity', async () => {
      const a = await rent(spot.key, 0.35, 'a');
      const b = await rent(spot.key, 0.36, 'b');
      const equal = await gql(other.key, rentMutation(0.35, 'equal'));
      assert.equal(equal.errors?.[0]?.extensions.code, 'NO_CAPACITY');
      const higher = await rent(other.key, 0.6, 'higher');
      await t.services.podController.idle(a);
      assert.equal((await rest(spot.key, `/v2/pods/${a}`)).status, 'EXITED');
      assert.match(
        (await rest(spot.key, `/v2/pods/${a}`)).statusReason,
        /an interruptible pod bidding \$0\.6\/GPU\/h \(this pod bid \$0\.35\)/,
      );
      assert.equal((await rest(spot.key, `/v2/pods/${b}`)).status, 'RUNNING');
      for (const [key, id] of [
        [spot.key, a],
        [spot.key, b],
        [other.key, higher],
      ] as const)
        await terminate(key, id);
    });

    test('a bid below the floor is refused over GraphQL and REST, naming the floor', async () => {
      const low = await gql(spot.key, rentMutation(0.1, 'low'));
      assert.equal(low.errors?.[0]?.extensions.code, 'BID_TOO_LOW');
      assert.match(low.errors?.[0]?.message ?? '', /bid at least \$0\.276/);
      const res = await t.request(spot.key, 'POST', '/v2/pods', {
        name: 'low',
        image: 'ubuntu:22.04',
        gpu: { id: GPU },
        interruptible: true,
        bidPerGpu: 0.2,
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.equal(json(res).code, 'BID_TOO_LOW');
      const cpu = await t.request(spot.key, 'POST', '/v2/pods', {
        name: 'cpu',
        image: 'ubuntu:22.04',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        interruptible: true,
      });
      assert.equal(cpu.statusCode, 400);
      // and the floor is what the catalog quotes
      const { data } = await gql(
        spot.key,
        `{ gpuTypes(input: {id: "${GPU}"}) { secureSpotPrice lowestPrice(input: {gpuCount: 1, secureCloud: true}) { minimumBidPrice } } }`,
      );
      assert.deepEqual(data.gpuTypes[0], { secureSpotPrice: 0.276, lowestPrice: { minimumBidPrice: 0.276 } });
      const v2 = await rest(spot.key, '/v2/catalog/gpus');
      assert.equal(v2.gpus.find((g: { id: string }) => g.id === GPU).price.secureSpot, 0.276);
    });

    test('REST v1 interruptible:true bids the floor; podBidResume restarts an interrupted pod at a new bid once there is room', async () => {
      const res = await t.request(spot.key, 'POST', '/v1/pods', {
        name: 'v1-spot',
        imageName: 'ubuntu:22.04',
        gpuTypeIds: [GPU],
        interruptible: true,
        volumeInGb: 0,
      });
      assert.equal(res.statusCode, 201, res.body);
      const v1 = json(res);
      assert.equal(v1.interruptible, true);
      assert.equal(v1.costPerHr, 0.276);
      await t.services.podController.idle(v1.id);
      const filler = await createOnDemand(other.key, 'filler');
      const taker = await createOnDemand(other.key, 'taker');
      await t.services.podController.idle(v1.id);
      assert.equal((await rest(spot.key, `/v2/pods/${v1.id}`)).status, 'EXITED');

      const resume = `mutation($podId: String!, $bidPerGpu: Float!, $gpuCount: Int!) {
        podBidResume(input: {podId: $podId, bidPerGpu: $bidPerGpu, gpuCount: $gpuCount}) { id costPerHr desiredStatus podType }
      }`;
      const full = await gql(spot.key, resume, { podId: v1.id, bidPerGpu: 0.5, gpuCount: 1 });
      assert.equal(full.errors?.[0]?.extensions.code, 'HOST_FULL');
      await terminate(other.key, taker);
      const resumed = await gql(spot.key, resume, { podId: v1.id, bidPerGpu: 0.5, gpuCount: 1 });
      assert.equal(resumed.errors, undefined, JSON.stringify(resumed.errors));
      assert.deepEqual(resumed.data.podBidResume, {
        id: v1.id,
        costPerHr: 0.5,
        desiredStatus: 'RUNNING',
        podType: 'INTERRUPTABLE',
      });
      const others = await gql(spot.key, resume, { podId: filler, bidPerGpu: 0.5, gpuCount: 1 });
      assert.equal(others.errors?.[0]?.extensions.code, 'NOT_FOUND', "another account's pod is not found");
      await terminate(spot.key, v1.id);
      await terminate(other.key, filler);
    });
  });
}
