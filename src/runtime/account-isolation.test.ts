import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../config.js';
import {
  accountIsolationOf,
  isolatesAccounts,
  isolationGapRefusal,
  multiAccountCreateRefusal,
  multiAccountStartRefusal,
  sharedReach,
  type AccountIsolation,
} from './account-isolation.js';
import { dockerRuntime } from './docker/module.js';

const FIREWALL_GAP = {
  kind: 'firewall' as const,
  detail: 'the container firewall could not be installed (iptables-save: Permission denied)',
};
const SHARED_GAP = {
  kind: 'shared-network' as const,
  detail: 'instance pod1 is still on a network accounts share (engine said no)',
};

const LOOPBACK = 'http://127.0.0.1:8080';
/** A container runtime's conditions (own networks, hardened), the opt-ins off. */
const CONTAINERS = { ownNetworks: true, hardening: true, acceptSharedHost: false, acceptHostNetwork: false };
/** The process runtime's: instances share the host. */
const SHARED = { ...CONTAINERS, ownNetworks: false, hardening: false };
const deployment = (overrides: Partial<AccountIsolation> = {}): AccountIsolation => ({
  ...CONTAINERS,
  workerJobUrl: LOOPBACK,
  ...overrides,
});

test('a runtime whose instances share the host cannot keep accounts apart, whatever the job URL', () => {
  for (const url of [LOOPBACK, 'http://10.0.0.5:8080'])
    assert.equal(sharedReach({ ...SHARED, workerJobUrl: url }), 'shared-host', url);
});

test('a runtime without hardening, or without networks of its own, cannot keep accounts apart either', () => {
  const url = 'http://10.0.0.5:8080';
  assert.equal(sharedReach({ ...CONTAINERS, hardening: false, workerJobUrl: url }), 'shared-host');
  assert.equal(sharedReach({ ...CONTAINERS, ownNetworks: false, workerJobUrl: url }), 'shared-host');
});

test('a container runtime cannot keep accounts apart exactly when its workers are on the host network: a loopback job URL', () => {
  for (const url of [LOOPBACK, 'http://localhost:8080', 'http://[::1]:9000', 'http://127.0.0.2'])
    assert.equal(sharedReach({ ...CONTAINERS, workerJobUrl: url }), 'host-network', url);
  for (const url of ['http://10.0.0.5:8080', 'http://172.17.0.1:8080', 'https://jobs.example.test'])
    assert.equal(sharedReach({ ...CONTAINERS, workerJobUrl: url }), null, url);
});

test('a deployment isolates accounts only with every condition met and nothing missing', () => {
  const offLoopback = deployment({ workerJobUrl: 'http://10.0.0.5:8080' });
  assert.equal(isolatesAccounts(offLoopback, []), true);
  assert.equal(isolatesAccounts(offLoopback, [FIREWALL_GAP]), false);
  assert.equal(isolatesAccounts(deployment(), []), false, 'workers on the host network');
  assert.equal(isolatesAccounts({ ...offLoopback, hardening: false }, []), false);
});

test('a docker deployment with a loopback job URL refuses a second account at start and at creation, naming why and what to do', () => {
  const start = multiAccountStartRefusal(2, deployment());
  assert.ok(start);
  assert.match(
    start,
    /^refusing to start: this deployment has 2 accounts, and the docker runtime puts serverless workers on the host's network while the job URL they are given \(127\.0\.0\.1:8080\) is on loopback/,
  );
  for (const named of [
    /--host/,
    /GANTRY_HOST/,
    /GANTRY_PUBLIC_JOB_URL/,
    /server\.publicJobUrl/,
    /server\.jobPort/,
    /runtime\.docker\.allowMultipleAccountsOnHostNetwork: true/,
    /GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT=true/,
  ])
    assert.match(start, named);
  assert.doesNotMatch(
    start,
    /runtime\.process\.allowMultipleAccounts/,
    "the process runtime's opt-in is not the one to take",
  );
  const create = multiAccountCreateRefusal(1, deployment());
  assert.ok(create);
  assert.match(
    create,
    /^refusing to create a second account: the docker runtime puts serverless workers on the host's network/,
  );
  assert.match(create, /runtime\.docker\.allowMultipleAccountsOnHostNetwork: true/);
  assert.match(create, /not from gantry serve's flags/);
});

test("a refusal shows the job URL's host and port, never its credentials or path", () => {
  const refusal = multiAccountStartRefusal(
    2,
    deployment({ workerJobUrl: 'http://user:s3cret@localhost:8080/base?token=t0k' }),
  );
  assert.match(refusal ?? '', /\(localhost:8080\)/);
  assert.doesNotMatch(refusal ?? '', /s3cret|t0k|user/);
});

test('a docker deployment refuses nothing with one account, with a non-loopback job URL, or with its own opt-in', () => {
  assert.equal(multiAccountStartRefusal(1, deployment()), null);
  assert.equal(multiAccountCreateRefusal(0, deployment()), null);
  const ownNetwork = deployment({ workerJobUrl: 'http://172.17.0.1:8080' });
  assert.equal(multiAccountStartRefusal(5, ownNetwork), null);
  assert.equal(multiAccountCreateRefusal(5, ownNetwork), null);
  const optedIn = deployment({ acceptHostNetwork: true });
  assert.equal(multiAccountStartRefusal(5, optedIn), null);
  assert.equal(multiAccountCreateRefusal(5, optedIn), null);
});

test("one runtime's opt-in never lifts the other's rule", () => {
  assert.ok(multiAccountStartRefusal(2, deployment({ acceptSharedHost: true })));
  assert.ok(multiAccountStartRefusal(2, deployment({ ...SHARED, acceptHostNetwork: true })));
  assert.equal(multiAccountStartRefusal(2, deployment({ ...SHARED, acceptSharedHost: true })), null);
});

test('the process runtime refuses a second account with its own reason and opt-in, as before', () => {
  const start = multiAccountStartRefusal(3, deployment(SHARED));
  assert.match(
    start ?? '',
    /^refusing to start: this deployment has 3 accounts, and the process runtime runs every instance as a process of the server's own user/,
  );
  assert.match(
    start ?? '',
    /runtime\.process\.allowMultipleAccounts: true in the config file \(or GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT=true\)/,
  );
  assert.match(
    multiAccountCreateRefusal(1, deployment(SHARED)) ?? '',
    /^refusing to create a second account: the process runtime/,
  );
});

test("the deployment a config describes takes the workers' job URL and both opt-ins from it", () => {
  const config = loadConfig({
    env: {
      GANTRY_DATA_DIR: '/nonexistent/gantry',
      GANTRY_RUNTIME: 'docker',
      GANTRY_HOST: '0.0.0.0',
      GANTRY_PUBLIC_JOB_URL: 'http://192.0.2.10:8081',
      GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'true',
    },
  });
  assert.deepEqual(accountIsolationOf(dockerRuntime.isolation(config), config), {
    ...CONTAINERS,
    workerJobUrl: 'http://192.0.2.10:8081',
    acceptHostNetwork: true,
  });
  const onAllAddresses = loadConfig({
    env: { GANTRY_DATA_DIR: '/nonexistent/gantry', GANTRY_RUNTIME: 'docker', GANTRY_HOST: '0.0.0.0' },
  });
  assert.equal(
    sharedReach(accountIsolationOf(dockerRuntime.isolation(onAllAddresses), onAllAddresses)),
    'host-network',
    'listening on 0.0.0.0 alone still hands workers a loopback URL',
  );
});

test('a missing container firewall refuses a start set up to keep accounts apart, even with one account, saying how to go on', () => {
  const isolating = deployment({ workerJobUrl: 'http://10.250.1.1:8081' });
  const refusal = isolationGapRefusal(1, isolating, [FIREWALL_GAP]);
  assert.ok(refusal);
  assert.match(refusal, /container firewall could not be installed \(iptables-save: Permission denied\)/);
  assert.match(refusal, /CAP_NET_ADMIN/);
  assert.match(refusal, /runtime\.docker\.firewall\.command/);
  assert.match(refusal, /runtime\.docker\.firewall\.mode: off/);
  assert.equal(isolationGapRefusal(1, isolating, []), null);
});

test('on a loopback job URL (one account, workers on the host network) a missing firewall is no reason to refuse; a second account is', () => {
  assert.equal(isolationGapRefusal(1, deployment(), [FIREWALL_GAP]), null);
  assert.match(isolationGapRefusal(2, deployment({ acceptHostNetwork: true }), [FIREWALL_GAP]) ?? '', /2 accounts/);
});

test('an instance left on a shared network refuses a second account only', () => {
  const isolating = deployment({ workerJobUrl: 'http://10.250.1.1:8081' });
  assert.equal(isolationGapRefusal(1, isolating, [SHARED_GAP]), null);
  const refusal = isolationGapRefusal(3, isolating, [SHARED_GAP, FIREWALL_GAP]);
  assert.ok(refusal);
  assert.match(refusal, /3 accounts/);
  assert.match(refusal, /instance pod1 is still on a network accounts share/);
  assert.match(refusal, /stop and start those instances/);
  assert.match(refusal, /CAP_NET_ADMIN/);
});
