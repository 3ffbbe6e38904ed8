import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dockerEngine, makeDockerRuntime, noEngine } from '../../../test/support/docker.js';
import { instanceSpec } from '../runtime-contract.js';
import { ContainerFirewall } from './container-firewall.js';
import type { FirewallPolicy } from './firewall-rules.js';

// Awaited before any test is declared: a test declared earlier would let the file's root after hooks run before the later ones.
const engine = await dockerEngine();

const policy: FirewallPolicy = {
  tag: 'ab12c',
  bridgePrefix: 'gab12c',
  legacyBridges: [],
  allow: [{ cidr: '10.250.1.1/32', port: 8081 }],
};

const cannot =
  process.getuid?.() !== 0
    ? 'needs root (a network namespace of its own)'
    : spawnSync('sh', ['-c', 'command -v iptables-restore && command -v nsenter']).status !== 0
      ? 'iptables or nsenter is not installed'
      : false;
if (cannot && process.env.CI === 'true') throw new Error(`CI=true: ${cannot}`);

describe(
  'the container firewall installed with real iptables, in a network namespace of its own',
  { skip: cannot },
  () => {
    const ns = `gfw${process.pid.toString(36)}`;
    const prefix = ['nsenter', `--net=/var/run/netns/${ns}`];
    const save = () =>
      spawnSync(prefix[0]!, [...prefix.slice(1), 'iptables-save', '-t', 'filter'], { encoding: 'utf8' }).stdout;
    before(() => assert.equal(spawnSync('ip', ['netns', 'add', ns]).status, 0));
    after(() => spawnSync('ip', ['netns', 'del', ns]));

    test('installing twice leaves one jump per hook and the chains as the policy says', async () => {
      const firewall = new ContainerFirewall({ command: prefix });
      await firewall.install(policy);
      await firewall.install(policy);
      const rules = save().split('\n');
      assert.deepEqual(
        rules.filter((l) => l.includes('-j GANTRY-ab12c-')),
        ['-A INPUT -i gab12c+ -j GANTRY-ab12c-IN', '-A FORWARD -i gab12c+ -j GANTRY-ab12c-FWD'],
      );
      assert.ok(rules.includes('-A GANTRY-ab12c-IN -d 10.250.1.1/32 -p tcp -m tcp --dport 8081 -j RETURN'));
      assert.equal(
        rules.filter((l) => l === '-A GANTRY-ab12c-IN -j DROP').length,
        1,
        'the chain was emptied, not added to',
      );
    });

    test("on an engine's host the forward chain hangs off DOCKER-USER, and another installation's rules stay", async () => {
      spawnSync(prefix[0]!, [...prefix.slice(1), 'iptables', '-N', 'DOCKER-USER']);
      await new ContainerFirewall({ command: prefix }).install({ ...policy, tag: 'cd34e', bridgePrefix: 'gcd34e' });
      await new ContainerFirewall({ command: prefix }).install(policy);
      const rules = save().split('\n');
      assert.ok(rules.includes('-A DOCKER-USER -i gab12c+ -j GANTRY-ab12c-FWD'));
      assert.ok(rules.includes('-A DOCKER-USER -i gcd34e+ -j GANTRY-cd34e-FWD'));
      assert.ok(rules.includes('-A INPUT -i gcd34e+ -j GANTRY-cd34e-IN'));
    });

    test("a service user holding CAP_NET_ADMIN and nothing else installs it (the agent's systemd unit)", async () => {
      const user = [
        ...prefix,
        'setpriv',
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '--inh-caps=+net_admin',
        '--ambient-caps=+net_admin',
      ];
      await new ContainerFirewall({ command: user }).install({ ...policy, tag: 'ef56a', bridgePrefix: 'gef56a' });
      assert.ok(save().split('\n').includes('-A INPUT -i gef56a+ -j GANTRY-ef56a-IN'));
    });

    test('without the privilege to change the firewall the install fails, saying what iptables said', async () => {
      const unprivileged = new ContainerFirewall({
        command: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all'],
      });
      await assert.rejects(
        unprivileged.install(policy),
        /iptables-save -t filter exited with \d+: .*(denied|not permitted)/i,
      );
    });
  },
);

after(() => engine?.client.close());

test(
  'a runtime whose firewall cannot be installed says so as a gap in its isolation, and starts instances still',
  { skip: engine ? false : noEngine() },
  async () => {
    const t = makeDockerRuntime(engine!, { firewall: { command: ['false'], allow: [] } });
    try {
      await t.runtime.attach();
      const gaps = t.runtime.isolationGaps();
      assert.equal(gaps.length, 1);
      assert.equal(gaps[0]!.kind, 'firewall');
      assert.match(
        gaps[0]!.detail,
        /the container firewall could not be installed \(false iptables-save -t filter exited with 1/,
      );
      // whether that may serve is the server's to decide (account-isolation.ts), not the runtime's
      const started = await t.runtime.start(instanceSpec({ image: engine!.images.idle, vcpus: 0, memoryGb: 0 }));
      assert.equal(started.state, 'running');
    } finally {
      await t.cleanup();
    }
  },
);
