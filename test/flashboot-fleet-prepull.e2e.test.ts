/**
 * FlashBoot's pre-pulled images on fleet hosts (docs/fleet.md "Pre-pulled images"): a control
 * plane with `runtime: fleet` (a whole listening server) and a real `gantry agent` process over a
 * real Docker Engine (DOCKER_HOST, the agent's own namespace), a real registry with authentication
 * (test/support/registry.ts). The pre-pull passes (serverless/image-prepull.ts) run on the test's
 * schedule (`pass()`): a FlashBoot endpoint's private image is pulled on the agent's host with its
 * owner's credential only, an image no endpoint wants any more is removed there, and a host whose
 * agent predates the operations (a stand-in speaking the protocol over HTTP, answering as an older
 * agent answers an operation kind it does not know) is left out without stopping the loop.
 * Skipped, saying why, without an engine or a registry (a failure under CI=true).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalImage } from '../src/domain/image-ref.js';
import { AGENT_API_PREFIX, type Operation } from '../src/fleet/protocol.js';
import type { FleetRuntime } from '../src/fleet/fleet-runtime.js';
import { dockerEngine, noEngine, removeNamespace, uniqueNamespace } from './support/docker.js';
import { eventually, freePortRange } from './support/eventually.js';
import { call, capacity, joinBody, startFleetServer, type FleetServer } from './support/fleet.js';
import {
  forgetRegistry,
  pushImage,
  registryUnavailable,
  startRegistry,
  type TestRegistry,
} from './support/registry.js';
import { spawnAgent, type SpawnedAgent } from './support/spawn-agent.js';

const engine = await dockerEngine();
after(() => engine?.client.close());
const noRegistry = engine ? registryUnavailable() : null;
const ALICE = { username: 'alice', password: 'alice-pw-4711' };
/** What an agent answers an operation kind it does not know (src/agent/operation-applier.ts). */
const unknownKind = (kind: string) => `unknown operation kind "${kind}": update gantry agent on this host`;

describe('FlashBoot pre-pulled images on a fleet host', { skip: !engine ? noEngine() : (noRegistry ?? false) }, () => {
  const e = engine!;
  const run = randomBytes(4).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'gantry-fleet-prepull-'));
  const namespace = uniqueNamespace();
  let registry: TestRegistry;
  let s: FleetServer;
  let agent: SpawnedAgent;
  let hostId = '';
  let privateImage = '';
  let alice: { accountId: string; credentialId: string };
  let bob: { accountId: string };

  const services = () => s.server.services;
  const fleetRuntime = () => services().runtime as FleetRuntime;
  const onEngine = async (image: string) => (await e.client.inspectImage(canonicalImage(image).ref)) !== null;
  /** The agent's record on its engine (prepared-images.ts: a labelled volume per image, in its namespace). */
  const recorded = async () =>
    (await e.client.listVolumes({ label: [`gantry.namespace=${namespace}`, 'gantry.prepulled'] }))
      .map((v) => v.Labels?.['gantry.prepulled'])
      .sort();
  const flashEndpoint = async (accountId: string, registryId: string | null, name: string) => {
    const template = await services().templates.create(accountId, {
      name: `${name}-${run}`,
      imageName: privateImage,
      isServerless: true,
      containerDiskInGb: 5,
      ...(registryId ? { containerRegistryAuthId: registryId } : {}),
    });
    return services().endpoints.create(accountId, {
      name,
      templateId: template.id,
      instanceIds: ['cpu3c-2-4'],
      workersMin: 0,
      workersMax: 1,
      flashboot: true,
    });
  };
  const newAccount = async (name: string) => (await services().accounts.createAccount(`${name}-${run}`)).id;

  before(async () => {
    registry = await startRegistry({ alice: ALICE.password });
    privateImage = `${registry.address}/acme-${run}/model:1`;
    await pushImage(e.dockerHost, e.images.idle, privateImage, ALICE);
    s = await startFleetServer({
      file: {
        // The control plane judges a template's image by the policy the agents' engines pull under.
        runtime: { kind: 'fleet', docker: { registries: { allow: [registry.address] } } },
        serverless: { flashboot: { prepull: { intervalMs: 0 } } },
      },
    });
    const { token } = await services().fleet.createJoinToken();
    const ports = await freePortRange(10);
    agent = spawnAgent(
      [
        '--server',
        s.url,
        '--token',
        token,
        '--data-dir',
        join(dir, 'agent'),
        '--name',
        'prepull-host',
        '--namespace',
        namespace,
        '--public-ip',
        '127.0.0.1',
        '--port-range',
        `${ports[0]}-${ports[1]}`,
        '--docker-host',
        e.dockerHost,
        '--nvidia-smi',
        join(dir, 'no-nvidia-smi'),
        '--registries-allow',
        registry.address,
      ],
      { GANTRY_LOG_LEVEL: 'warn' },
    );
    await eventually(
      () => `the agent's host in the inventory; the agent said:\n${agent.output()}`,
      async () => {
        const hosts = services().inventory.snapshot().hosts;
        hostId = hosts[0]?.id ?? '';
        return hosts.length === 1 && services().inventory.isAvailable(hostId);
      },
      60_000,
    );
    alice = { accountId: await newAccount('alice'), credentialId: '' };
    alice.credentialId = (await services().registries.create(alice.accountId, { name: 'alice-reg', ...ALICE })).id;
    bob = { accountId: await newAccount('bob') };
  });
  after(async () => {
    await agent?.stop('SIGKILL');
    await s?.close();
    await removeNamespace(e.client, namespace);
    if (registry) {
      await forgetRegistry(e.client, e.dockerHost, registry.address, [canonicalImage(privateImage).repository]);
      await registry.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test("a FlashBoot endpoint whose workers may run on a fleet host gets its private image pulled there with its owner's credential, and without a credential nothing is pulled", async () => {
    assert.equal(await onEngine(privateImage), false, 'not on the engine before');
    const bobs = await flashEndpoint(bob.accountId, null, 'bob-private');
    await services().prepull.pass();
    assert.equal(await onEngine(privateImage), false, 'no credential: nothing pulled');
    assert.deepEqual(await fleetRuntime().preparedImages(hostId), []);
    await services().endpoints.update(bob.accountId, bobs.id, { flashboot: false });

    await flashEndpoint(alice.accountId, alice.credentialId, 'alice-flash');
    await services().prepull.pass();
    assert.equal(await onEngine(privateImage), true, "pulled by the host's agent ahead of the first job");
    const ref = canonicalImage(privateImage).ref;
    assert.deepEqual(await recorded(), [ref], "recorded on the host's engine, in the agent's namespace");
    const listed = await fleetRuntime().preparedImages(hostId);
    assert.deepEqual(
      listed.map((p) => p.image),
      [ref],
    );
    assert.ok(listed[0]!.sizeBytes > 0, 'with its size, for the disk budget');
    assert.doesNotMatch(agent.output(), new RegExp(ALICE.password), 'the credential is never logged');
  });

  test('an image no FlashBoot endpoint wants any more is removed from the fleet host, with its record', async () => {
    const [endpoint] = (await services().endpoints.list(alice.accountId)).filter((x) => x.name === 'alice-flash');
    assert.ok(endpoint);
    await services().endpoints.update(alice.accountId, endpoint.id, { flashboot: false });
    await services().prepull.pass();
    assert.equal(await onEngine(privateImage), false, 'removed by the agent');
    assert.deepEqual(await recorded(), []);
    assert.deepEqual(await fleetRuntime().preparedImages(hostId), []);
    await services().endpoints.update(alice.accountId, endpoint.id, { flashboot: true });
  });

  test("a host whose agent predates pre-pulling refuses it once: the host is left out from then on, the other hosts' images are pulled, until it reports in full again", async () => {
    const { token } = await services().fleet.createJoinToken();
    const joined = await call(
      s.url,
      null,
      'POST',
      `${AGENT_API_PREFIX}/join`,
      joinBody(token, { name: 'old-host', capacity: capacity({ gpus: [], cudaVersion: null, cpuFlavors: ['cpu3c'] }) }),
    );
    assert.equal(joined.status, 201, JSON.stringify(joined.body));
    const old = { hostId: joined.body.hostId as string, credential: joined.body.credential as string };
    const report = (body: unknown) => call(s.url, old.credential, 'POST', `${AGENT_API_PREFIX}/report`, body);
    assert.equal((await report({ instances: { full: true, items: [] } })).status, 200);
    await eventually('the old host available', async () => services().inventory.isAvailable(old.hostId));
    // The older agent: every operation it is given is one it does not know.
    const received: Operation[] = [];
    let after = 0;
    let polling = true;
    const loop = (async () => {
      while (polling) {
        const res = await call(
          s.url,
          old.credential,
          'GET',
          `${AGENT_API_PREFIX}/operations?after=${after}&waitMs=500`,
        );
        const ops = (res.body?.operations ?? []) as Operation[];
        for (const op of ops) after = Math.max(after, op.seq);
        received.push(...ops);
        if (ops.length > 0)
          await report({ acks: ops.map((op) => ({ opId: op.id, ok: false, error: unknownKind(op.kind) })) });
      }
    })();
    try {
      assert.equal(fleetRuntime().canPrepareImages(old.hostId), true, 'not known to be old before it answers');
      await services().prepull.pass();
      assert.equal(await onEngine(privateImage), true, "the real agent's host got the image in the same pass");
      assert.deepEqual(
        received.map((op) => op.kind),
        ['preparedImages'],
        'the old host was asked once',
      );
      assert.equal(fleetRuntime().canPrepareImages(old.hostId), false, 'and is known to be unable now');
      await services().prepull.pass();
      assert.equal(received.length, 1, 'nothing more is sent to it');
      // Updated (or reconnected): its next full report, and it is asked again.
      assert.equal((await report({ instances: { full: true, items: [] } })).status, 200);
      assert.equal(fleetRuntime().canPrepareImages(old.hostId), true);
    } finally {
      polling = false;
      await loop;
    }
  });
});
