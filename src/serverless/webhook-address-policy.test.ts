import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../domain/clock.js';
import { WebhookAddressPolicy } from './webhook-address-policy.js';

const SUFFIX = 'this deployment refuses private webhook receivers (serverless.webhooks.privateAddresses)';

/** A policy over a settable account count that records how often it was counted. */
const policyWith = (mode: 'auto' | 'allow' | 'deny', accounts = 1) => {
  const state = { accounts, counts: 0, fail: false };
  const clock = new FakeClock(0);
  const policy = new WebhookAddressPolicy({
    mode,
    clock,
    countAccounts: async () => {
      state.counts++;
      if (state.fail) throw new Error('database down');
      return state.accounts;
    },
  });
  return { policy, state, clock };
};

test('deny refuses a private literal plainly, naming the address and the setting', async () => {
  const { policy } = policyWith('deny');
  assert.equal(await policy.refusal('10.0.0.5', ['10.0.0.5']), `webhook address 10.0.0.5 is private; ${SUFFIX}`);
  assert.equal(await policy.refusal('::1', ['::1']), `webhook address ::1 is loopback; ${SUFFIX}`);
});

test('a host name refused for what it resolves to does not repeat the address (no map of internal DNS)', async () => {
  const { policy } = policyWith('deny');
  const refusal = await policy.refusal('db.corp.internal', ['10.20.30.40']);
  assert.equal(refusal, `webhook host db.corp.internal resolves to an address that is private; ${SUFFIX}`);
  assert.doesNotMatch(refusal, /10\.20/);
});

test('a host is refused when any of its addresses is non-public, not only the first', async () => {
  const { policy } = policyWith('deny');
  assert.match(
    (await policy.refusal('mixed.example', ['93.184.216.34', '127.0.0.1']))!,
    /resolves to an address that is loopback/,
  );
});

test('public addresses are allowed under every mode, without counting accounts', async () => {
  for (const mode of ['auto', 'allow', 'deny'] as const) {
    const { policy, state } = policyWith(mode, 5);
    assert.equal(
      await policy.refusal('example.com', ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']),
      null,
      mode,
    );
    assert.equal(state.counts, 0, mode);
  }
});

test('allow lets every address through', async () => {
  const { policy } = policyWith('allow', 5);
  assert.equal(await policy.refusal('127.0.0.1', ['127.0.0.1']), null);
  assert.equal(await policy.refusal('metadata', ['169.254.169.254']), null);
});

test('auto allows private receivers while there is one account and refuses them from the first decision after a second exists', async () => {
  const { policy, state } = policyWith('auto', 1);
  assert.equal(await policy.refusal('127.0.0.1', ['127.0.0.1']), null);
  state.accounts = 2;
  policy.accountCreated(); // what this process's AccountsService calls
  assert.equal(await policy.refusal('127.0.0.1', ['127.0.0.1']), `webhook address 127.0.0.1 is loopback; ${SUFFIX}`);
});

test('auto with one account counts once per second of the clock, not per private webhook, and answers without a wait meanwhile', async () => {
  const { policy, state, clock } = policyWith('auto', 1);
  for (let i = 0; i < 5; i++) assert.equal(await policy.refusal('127.0.0.1', ['127.0.0.1']), null);
  assert.equal(state.counts, 1);
  state.accounts = 2; // created by another replica or the CLI's own process: no notice here
  clock.advance(999);
  assert.equal(await policy.refusal('127.0.0.1', ['127.0.0.1']), null, 'trusted for a second');
  clock.advance(1);
  assert.notEqual(await policy.refusal('127.0.0.1', ['127.0.0.1']), null, 'then counted again');
  assert.equal(state.counts, 2);
});

test('an account created while a count is under way is not hidden by that count', async () => {
  const { policy, state } = policyWith('auto', 1);
  const during = policy.refusal('127.0.0.1', ['127.0.0.1']); // its count read one account
  state.accounts = 2;
  policy.accountCreated();
  assert.equal(await during, null, 'decided before the creation');
  assert.notEqual(await policy.refusal('127.0.0.1', ['127.0.0.1']), null);
});

test('auto counts accounts no more once it has seen two (accounts are never deleted)', async () => {
  const { policy, state } = policyWith('auto', 3);
  for (let i = 0; i < 5; i++) assert.notEqual(await policy.refusal('10.0.0.5', ['10.0.0.5']), null);
  assert.equal(state.counts, 1);
});

test('auto refuses when the account count cannot be read (fail closed)', async () => {
  const { policy, state } = policyWith('auto', 1);
  state.fail = true;
  assert.notEqual(await policy.refusal('127.0.0.1', ['127.0.0.1']), null);
  state.fail = false;
  assert.equal(await policy.refusal('127.0.0.1', ['127.0.0.1']), null, 'a later successful count decides again');
});
