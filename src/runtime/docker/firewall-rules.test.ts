import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BLOCKED_RANGES, firewallRestore, type FirewallPolicy } from './firewall-rules.js';

const policy: FirewallPolicy = {
  tag: 'ab12c',
  bridgePrefix: 'gab12c',
  legacyBridges: ['br-0123456789ab'],
  allow: [
    { cidr: '10.250.1.1/32', port: 8081 },
    { cidr: '10.20.0.0/16', port: null },
  ],
};
const DOCKER_SAVE = [
  '*filter',
  ':INPUT ACCEPT [0:0]',
  ':FORWARD DROP [0:0]',
  ':DOCKER-USER - [0:0]',
  '-A FORWARD -j DOCKER-USER',
  'COMMIT',
].join('\n');
const lines = (text: string) => text.split('\n').filter((l) => l !== '');

test("traffic from the installation's bridges to the host passes only as replies, DNS and the allowed destinations", () => {
  const rules = lines(firewallRestore(policy, DOCKER_SAVE));
  const input = rules.filter((l) => l.startsWith('-A GANTRY-ab12c-IN '));
  assert.deepEqual(input, [
    '-A GANTRY-ab12c-IN -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN',
    '-A GANTRY-ab12c-IN -p udp -m udp --dport 53 -j RETURN',
    '-A GANTRY-ab12c-IN -p tcp -m tcp --dport 53 -j RETURN',
    '-A GANTRY-ab12c-IN -d 10.250.1.1/32 -p tcp -m tcp --dport 8081 -j RETURN',
    '-A GANTRY-ab12c-IN -d 10.20.0.0/16 -j RETURN',
    '-A GANTRY-ab12c-IN -j DROP',
  ]);
  assert.ok(rules.includes('-I INPUT 1 -i gab12c+ -j GANTRY-ab12c-IN'));
  assert.ok(rules.includes('-I INPUT 1 -i br-0123456789ab -j GANTRY-ab12c-IN'), 'a bridge an earlier version made too');
});

test('forwarded traffic keeps to its bridges, the allowed destinations and the internet: metadata and private ranges are dropped', () => {
  const rules = lines(firewallRestore(policy, DOCKER_SAVE));
  const forward = rules.filter((l) => l.startsWith('-A GANTRY-ab12c-FWD '));
  const at = (rule: string) => forward.indexOf(`-A GANTRY-ab12c-FWD ${rule}`);
  for (const cidr of BLOCKED_RANGES) assert.ok(at(`-d ${cidr} -j DROP`) > 0, cidr);
  for (const before of [
    '-d 10.250.1.1/32 -p tcp -m tcp --dport 8081 -j RETURN',
    '-o gab12c+ -j RETURN',
    '-p udp -m udp --dport 53 -j RETURN',
  ])
    assert.ok(at(before) >= 0 && at(before) < at('-d 10.0.0.0/8 -j DROP'), `${before} comes before the private drop`);
  assert.ok(at('-d 169.254.0.0/16 -j DROP') > 0);
  assert.equal(
    forward.at(-1),
    '-A GANTRY-ab12c-FWD -d 240.0.0.0/4 -j DROP',
    'the rest (the internet) goes on to Docker',
  );
  assert.ok(
    rules.includes('-I DOCKER-USER 1 -i gab12c+ -j GANTRY-ab12c-FWD'),
    'DOCKER-USER: Docker keeps it first in FORWARD',
  );
});

test('an engine that manages no iptables has no DOCKER-USER: the forward chain hangs off FORWARD', () => {
  const rules = lines(
    firewallRestore(policy, ['*filter', ':INPUT ACCEPT [0:0]', ':FORWARD ACCEPT [0:0]', 'COMMIT'].join('\n')),
  );
  assert.ok(rules.includes('-I FORWARD 1 -i gab12c+ -j GANTRY-ab12c-FWD'));
  assert.ok(!rules.some((l) => l.includes('DOCKER-USER')));
});

test('installing again deletes the jumps the last install left before inserting them, and empties its chains', () => {
  const saved = [
    ...DOCKER_SAVE.split('\n').slice(0, -1),
    ':GANTRY-ab12c-IN - [0:0]',
    ':GANTRY-ab12c-FWD - [0:0]',
    '-A INPUT -i gab12c+ -j GANTRY-ab12c-IN',
    '-A DOCKER-USER -i gab12c+ -j GANTRY-ab12c-FWD',
    '-A INPUT -i gzzzzz+ -j GANTRY-zzzzz-IN',
    'COMMIT',
  ].join('\n');
  const rules = lines(firewallRestore(policy, saved));
  const deleted = rules.filter((l) => l.startsWith('-D '));
  assert.deepEqual(
    deleted,
    ['-D INPUT -i gab12c+ -j GANTRY-ab12c-IN', '-D DOCKER-USER -i gab12c+ -j GANTRY-ab12c-FWD'],
    "another installation's jump stays",
  );
  assert.ok(
    rules.indexOf('-D INPUT -i gab12c+ -j GANTRY-ab12c-IN') < rules.indexOf('-I INPUT 1 -i gab12c+ -j GANTRY-ab12c-IN'),
  );
  assert.ok(rules.includes(':GANTRY-ab12c-IN - [0:0]') && rules.includes(':GANTRY-ab12c-FWD - [0:0]'));
  assert.equal(rules[0], '*filter');
  assert.equal(rules.at(-1), 'COMMIT');
});
