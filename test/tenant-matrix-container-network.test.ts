/**
 * Tenants kept apart on the container data plane, tried as a hostile tenant would, from inside real
 * containers (pods and serverless workers of two accounts), on a Docker Engine with its default
 * network settings (iptables on) in a network namespace of the test's own, with Gantry (`gantry
 * serve`) running beside the engine as on a single host. Each defence is shown on its own:
 * - account networks: no TCP path from one account's containers to another's, while an account's
 *   own instances reach each other (the positive control);
 * - the capability drop: raw and packet sockets and device nodes are refused with EPERM;
 * - the container firewall: the job API is reached, the host's other services, the metadata
 *   address and the operator's private network are not — while a container the engine runs
 *   outside Gantry reaches every one of them (so the paths exist, and only the firewall stops them);
 * - the ARP-spoofing man in the middle that read another account's worker key: shown to work here
 *   with both defences taken away, stopped by account networks alone (raw sockets allowed) and by
 *   the capability drop alone (one shared segment).
 * A TCP probe counts "connection refused" as reached: only silence (a drop) is unreachable.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  inContainer,
  netprobeImage,
  netprobeUnavailable,
  netprobeWorkerImage,
  reaches,
  startOutsider,
} from './support/netprobe.js';
import { netnsEnginesUnavailable, startListener, startNetnsEngine, type NetnsEngine } from './support/netns-engine.js';
import { podOf, startGantryInEngine, workerOf, type GantryInEngine, type Placed } from './support/isolation-world.js';
import { removeStandIns } from './support/nvidia-smi.js';
import { eventually } from './support/eventually.js';

const ROOT = join(import.meta.dirname, '..');
const unavailable =
  netnsEnginesUnavailable() ??
  netprobeUnavailable() ??
  (existsSync(join(ROOT, 'dist', 'worker', 'index.js')) ? null : 'the worker library is not built (npm run build)');
if (unavailable && process.env.CI === 'true') throw new Error(`CI=true: ${unavailable}`);

/** The stand-in for a service of the engine's host that no container may reach (its database). */
const HOST_SERVICE_PORT = 15432;
/** The stand-in for a service on the operator's private network (the machine's end of the veth). */
const LAN_SERVICE_PORT = 15433;
const METADATA = '169.254.169.254';

describe('containers of two accounts on a Docker Engine with iptables on', { skip: unavailable ?? false }, () => {
  let engine: NetnsEngine;
  let podImage: string;
  let workerImage: string;
  let outsider: string;

  before(async () => {
    engine = await startNetnsEngine();
    [podImage, workerImage] = await Promise.all([netprobeImage(engine.client), netprobeWorkerImage(engine.client)]);
    const metadata = await engine.addNeighbour(METADATA);
    await startListener(metadata, METADATA, 80, (c) => after(() => void c.kill('SIGKILL')));
    await startListener(engine.nsenter, '0.0.0.0', HOST_SERVICE_PORT, (c) => after(() => void c.kill('SIGKILL')));
    await startListener([], engine.hostAddress, LAN_SERVICE_PORT, (c) => after(() => void c.kill('SIGKILL')));
    // The positive control: a container the engine runs outside Gantry, on its default bridge.
    outsider = await startOutsider(engine.client, podImage, 'isolation-outsider');
  });
  after(async () => {
    await engine?.stop();
    removeStandIns();
  });

  describe('with every defence (gantry serve, as shipped)', () => {
    let g: GantryInEngine;
    let a1: Placed, a2: Placed, b1: Placed;
    let aw: Placed, bw: Placed & { endpointId: string; key: string };

    before(async () => {
      g = await startGantryInEngine(engine);
      [a1, a2, b1, aw, bw] = await Promise.all([
        podOf(g.accountA, podImage, g.where(engine.client)),
        podOf(g.accountA, podImage, g.where(engine.client)),
        podOf(g.accountB, podImage, g.where(engine.client)),
        workerOf(g.accountA, workerImage, g.where(engine.client)),
        workerOf(g.accountB, workerImage, g.where(engine.client)),
      ]);
    });
    after(() => g?.stop());

    test("each account's instances are on a network of their own, on a bridge the firewall covers", () => {
      assert.equal(a1.network, a2.network);
      assert.equal(a1.network, aw.network, "an account's pods and workers share its network");
      assert.notEqual(a1.network, b1.network);
      assert.equal(b1.network, bw.network);
      assert.match(a1.network, new RegExp(`^gantry-${g.namespace}-acct-`));
      for (const p of [a1, b1]) assert.match(p.ip, /^10\.(22[4-9]|23\d)\./, 'a subnet from the pool');
    });

    test("no TCP path joins two accounts' containers, pods or workers, while an account's own reach each other", async () => {
      const tries = await Promise.all(
        (
          [
            [a1, a2, true],
            [a1, aw, true],
            [aw, a2, true],
            [a1, b1, false],
            [a1, bw, false],
            [aw, b1, false],
            [aw, bw, false],
            [bw, a1, false],
            [b1, aw, false],
          ] as const
        ).map(async ([from, to, expected]) => ({
          from: from.id,
          to: to.id,
          expected,
          ...(await reaches(engine.dockerHost, from.container, to.ip, 7000)),
        })),
      );
      for (const t of tries) assert.equal(t.reached, t.expected, JSON.stringify(t));
    });

    test('a container can open no raw or packet socket and make no device node: EPERM, in a pod and in a worker', async () => {
      for (const p of [a1, aw]) {
        assert.equal(
          await inContainer(engine.dockerHost, p.container, ['netprobe', 'sockets']),
          'raw=EPERM packet=EPERM',
          p.id,
        );
        assert.equal(await inContainer(engine.dockerHost, p.container, ['netprobe', 'mknod']), 'mknod=EPERM', p.id);
      }
      // the same probe, outside Gantry, with Docker's default capabilities
      assert.equal(await inContainer(engine.dockerHost, outsider, ['netprobe', 'sockets']), 'raw=OK packet=OK');
    });

    test("a container reaches the job API and none of its host's other services, the metadata address or the operator's network; one outside Gantry reaches them all", async () => {
      const targets = [
        { what: 'the job API', ip: engine.engineAddress, port: g.jobPort, gantry: true },
        { what: 'the main API', ip: engine.engineAddress, port: g.mainPort, gantry: false },
        { what: "the host's database", ip: engine.engineAddress, port: HOST_SERVICE_PORT, gantry: false },
        { what: "the host's database at the bridge's gateway", ip: a1.gateway, port: HOST_SERVICE_PORT, gantry: false },
        { what: 'the metadata address', ip: METADATA, port: 80, gantry: false },
        { what: "the operator's network", ip: engine.hostAddress, port: LAN_SERVICE_PORT, gantry: false },
      ];
      const tries = await Promise.all(
        [a1, aw, { id: 'outsider', container: outsider }].flatMap((from) =>
          targets.map(async (t) => ({
            from: from.id,
            what: t.what,
            expected: from.id === 'outsider' || t.gantry,
            ...(await reaches(engine.dockerHost, from.container, t.ip, t.port)),
          })),
        ),
      );
      for (const t of tries) assert.equal(t.reached, t.expected, JSON.stringify(t));
    });

    test("a worker behind the firewall still runs its account's jobs", async () => {
      const res = await g.accountB.call('POST', `/v2/${bw.endpointId}/runsync`, { input: { n: 1 } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const done =
        res.body.status === 'COMPLETED'
          ? res.body
          : (await g.accountB.call('GET', `/v2/${bw.endpointId}/status-sync/${res.body.id}?wait=60000`)).body;
      assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
      assert.deepEqual(done.output.echoed, { n: 1 });
    });

    test("the pod HTTP proxy reaches a pod's HTTP port through the container firewall, at the pod's own URL only", async () => {
      const web = await podOf(g.accountA, podImage, g.where(engine.client), undefined, ['8000/http']);
      // busybox's httpd (it goes to the background once listening) serves a page naming its pod
      await inContainer(engine.dockerHost, web.container, [
        'sh',
        '-c',
        `mkdir -p /www && echo "pod ${web.id}" > /www/index.html && httpd -p 8000 -h /www`,
      ]);
      const pod = await g.accountA.call('GET', `/v2/pods/${web.id}`);
      const url = (pod.body.httpProxy as Array<{ port: number; url: string }>).find((p) => p.port === 8000)?.url;
      assert.ok(url, JSON.stringify(pod.body));
      assert.equal(new URL(url).hostname, engine.engineAddress, 'served on the engine host, where the test reaches it');
      const page = await eventually('the pod page through the proxy', async () => {
        const res = await fetch(url);
        return res.status === 200 ? (await res.text()).trim() : null;
      });
      assert.equal(page, `pod ${web.id}`);
      // the same pod and port with another token reach nothing
      const forged = url.replace(
        /-([A-Za-z0-9]+)\/$/,
        (_m, token: string) => `-${token.slice(0, -1)}${token.endsWith('a') ? 'b' : 'a'}/`,
      );
      assert.notEqual(forged, url);
      const refused = await fetch(forged);
      assert.equal(refused.status, 404, await refused.text());
    });

    test('a container has no IPv6 address to reach its host by', async () => {
      const said = await inContainer(engine.dockerHost, a1.container, ['cat', '/proc/net/if_inet6']);
      assert.doesNotMatch(said, /eth0/, said);
    });
  });

  /**
   * The ARP-spoofing man in the middle: A's pod claims B's worker's gateway on the segment, reads
   * B's worker's calls to the job API (passing them on, so nothing looks wrong) and with them B's
   * worker key. Run against servers with some defences taken away.
   */
  const mitm = (from: Placed, victim: Placed): Promise<string> =>
    inContainer(engine.dockerHost, from.container, [
      'netprobe',
      'mitm',
      'eth0',
      victim.gateway,
      victim.ip,
      '15',
      'uthorization: ',
    ]);

  test("with both defences taken away the attack reads another account's worker key, and the key works: the attack is real here", async () => {
    const g = await startGantryInEngine(engine, { defencesOff: ['networks', 'hardening'] });
    try {
      const [attacker, victim] = await Promise.all([
        podOf(g.accountA, podImage, g.where(engine.client)),
        workerOf(g.accountB, workerImage, g.where(engine.client)),
      ]);
      assert.equal(attacker.network, victim.network, 'one shared segment');
      const said = await mitm(attacker, victim);
      const stolen = /FOUND uthorization: (\S+)/.exec(said)?.[1];
      assert.equal(stolen, victim.key, said);
      // the worker's id is in the paths it calls, as readable as its key
      const take = await fetch(
        `http://${engine.engineAddress}:${g.jobPort}/v2/${victim.endpointId}/job-take/${victim.id}`,
        {
          headers: { authorization: stolen },
        },
      );
      assert.ok(take.status === 200 || take.status === 204, `the stolen key calls B's worker protocol: ${take.status}`);
    } finally {
      await g.stop();
    }
  });

  test('account networks alone stop it: a pod with raw sockets allowed forges ARP on its own segment and reads nothing of another account', async () => {
    const g = await startGantryInEngine(engine, { defencesOff: ['hardening'] });
    try {
      const [attacker, victim] = await Promise.all([
        podOf(g.accountA, podImage, g.where(engine.client)),
        workerOf(g.accountB, workerImage, g.where(engine.client)),
      ]);
      assert.notEqual(attacker.network, victim.network);
      assert.equal(
        await inContainer(engine.dockerHost, attacker.container, ['netprobe', 'sockets']),
        'raw=OK packet=OK',
      );
      assert.equal(await mitm(attacker, victim), 'NOTFOUND');
    } finally {
      await g.stop();
    }
  });

  test('the capability drop alone stops it: on one segment shared with the victim, the pod cannot open the packet socket the attack needs', async () => {
    const g = await startGantryInEngine(engine, { defencesOff: ['networks'] });
    try {
      const [attacker, victim] = await Promise.all([
        podOf(g.accountA, podImage, g.where(engine.client)),
        workerOf(g.accountB, workerImage, g.where(engine.client)),
      ]);
      assert.equal(attacker.network, victim.network, 'one shared segment');
      assert.equal(await mitm(attacker, victim), 'packet=EPERM');
    } finally {
      await g.stop();
    }
  });
});
