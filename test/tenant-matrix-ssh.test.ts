// What a tenant could reach through the SSH proxy: another account's pod (with its own key, or
// with its token), a pod it did not create with startSsh, a stopped pod, a token it guessed, and
// other ways in (a password, keyboard-interactive). Every refusal is the same answer after the same
// reads, so none tells which pods exist.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { noOpenSsh, runSsh, type SshRun } from './support/openssh.js';
import { startSshFixture, type SshFixture, type SshPod, type SshTenant } from './support/ssh-fixture.js';

const REFUSED = /Permission denied \(publickey\)/;

describe('tenant matrix: the SSH proxy', { skip: noOpenSsh() }, () => {
  let f: SshFixture;
  let alice: SshTenant;
  let mallory: SshTenant;
  let alicePod: SshPod;
  let noSshPod: SshPod;
  let stoppedPod: SshPod;
  before(async () => {
    f = await startSshFixture();
    alice = await f.tenant('alice');
    mallory = await f.tenant('mallory');
    alicePod = await f.runningPod(alice);
    noSshPod = await f.runningPod(alice, { startSsh: false });
    stoppedPod = await f.runningPod(alice);
    await f.call(alice.key, 'POST', `/v2/pods/${stoppedPod.id}/action`, { action: 'stop' });
    stoppedPod = await f.podUntil(alice, stoppedPod.id, (p) => p.status === 'EXITED');
  });
  after(() => f?.close());

  const attempt = (user: string, key: string, args: string[] = []): Promise<SshRun> =>
    runSsh({ user, port: f.sshPort, key, input: 'echo reached-$((6*7))\nexit\n', args });

  /** Refused: exit 255, the one message, and nothing ran. */
  const assertRefused = (run: SshRun, what: string): string => {
    assert.equal(run.code, 255, `${what}: ${run.stdout} ${run.stderr}`);
    assert.match(run.stderr, REFUSED, what);
    assert.doesNotMatch(run.stdout, /reached-42/, what);
    return run.stderr.replace(/\S+@\S+:\s*/, '').trim();
  };

  test('the owner`s key reaches the pod (the control every refusal below is measured against)', async () => {
    const run = await attempt(alicePod.ssh.proxy!.username, alice.sshKey.path);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /reached-42/);
  });

  test('another account`s key, a pod without startSsh, a stopped pod and an unknown token are all refused with the same message', async () => {
    const messages = new Set<string>();
    messages.add(
      assertRefused(await attempt(alicePod.ssh.proxy!.username, mallory.sshKey.path), 'another account`s key'),
    );
    messages.add(
      assertRefused(await attempt(noSshPod.ssh.proxy!.username, alice.sshKey.path), 'a pod without startSsh'),
    );
    messages.add(assertRefused(await attempt(stoppedPod.ssh.proxy!.username, alice.sshKey.path), 'a stopped pod'));
    messages.add(assertRefused(await attempt('a'.repeat(26), alice.sshKey.path), 'an unknown token'));
    messages.add(assertRefused(await attempt(alicePod.id, alice.sshKey.path), 'the pod id as username'));
    messages.add(assertRefused(await attempt('x'.repeat(200), alice.sshKey.path), 'an overlong username'));
    assert.equal(messages.size, 1, [...messages].join('\n'));
  });

  test('a tenant with its own pod cannot reach another account`s pod by its token', async () => {
    await f.runningPod(mallory);
    assertRefused(await attempt(alicePod.ssh.proxy!.username, mallory.sshKey.path), 'mallory with alice`s token');
  });

  test('password and keyboard-interactive logins are refused: only public keys are offered', async () => {
    const run = await runSsh({
      user: alicePod.ssh.proxy!.username,
      port: f.sshPort,
      key: '/dev/null',
      args: ['-o', 'PubkeyAuthentication=no', '-o', 'PreferredAuthentications=password,keyboard-interactive'],
      input: '',
    });
    assert.equal(run.code, 255);
    assert.match(run.stderr, REFUSED);
  });

  test('a key removed from the account no longer opens a session', async () => {
    const put = await f.call(alice.key, 'PUT', '/v2/account/ssh-keys', []);
    assert.equal(put.status, 200);
    try {
      assertRefused(await attempt(alicePod.ssh.proxy!.username, alice.sshKey.path), 'a removed key');
    } finally {
      await f.call(alice.key, 'PUT', '/v2/account/ssh-keys', [alice.sshKey.publicKey]);
    }
  });

  test('another account reads no ssh.proxy token of a pod it does not own (404)', async () => {
    const res = await f.call(mallory.key, 'GET', `/v2/pods/${alicePod.id}`);
    assert.equal(res.status, 404);
    assert.doesNotMatch(JSON.stringify(res.body), new RegExp(alicePod.ssh.proxy!.username));
  });
});
