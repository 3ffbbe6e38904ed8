/**
 * The SSH proxy end to end with the real OpenSSH client: a whole server (process runtime) with
 * its proxy on a free port, accounts with real ed25519 keys, pods running a real process. The
 * Docker runtime's side is test/ssh-proxy-docker.e2e.test.ts; the refusals that keep tenants apart
 * are test/tenant-matrix-ssh.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from './support/eventually.js';
import { noOpenSsh, runSsh } from './support/openssh.js';
import { startSshFixture, type SshFixture, type SshPod, type SshTenant } from './support/ssh-fixture.js';

describe('the SSH proxy with OpenSSH (process runtime)', { skip: noOpenSsh() }, () => {
  let f: SshFixture;
  let alice: SshTenant;
  let pod: SshPod;
  before(async () => {
    f = await startSshFixture();
    alice = await f.tenant('alice');
    pod = await f.runningPod(alice);
  });
  after(() => f?.close());

  const session = (input: string, extra: Partial<Parameters<typeof runSsh>[0]> = {}) =>
    runSsh({ user: pod.ssh.proxy!.username, port: pod.ssh.proxy!.port, key: alice.sshKey.path, input, ...extra });

  test('a running pod shows ssh.proxy: the proxy host and port, an opaque token as username, and a ready-to-run command', () => {
    const proxy = pod.ssh.proxy!;
    assert.ok(proxy, JSON.stringify(pod.ssh));
    assert.equal(proxy.host, '127.0.0.1');
    assert.equal(proxy.port, f.sshPort);
    assert.match(proxy.username, /^[a-z0-9]{26}$/);
    assert.ok(!proxy.username.includes(pod.id) && !pod.id.includes(proxy.username));
    assert.equal(proxy.command, `ssh ${proxy.username}@127.0.0.1 -p ${f.sshPort}`);
  });

  test('with a key of the account the shell works: a typed command`s output comes back, in the pod`s folder with its environment', async () => {
    const run = await session('echo "hi-$((6*7)) $RUNPOD_POD_ID"\nexit\n');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`hi-42 ${pod.id}`));
  });

  test('the shell`s exit status is the session`s', async () => {
    const run = await session('exit 5\n');
    assert.equal(run.code, 5, run.stderr);
  });

  test('a command (exec request) is refused with the reason on stderr and exit status 1, and does not run', async () => {
    const run = await runSsh({
      user: pod.ssh.proxy!.username,
      port: f.sshPort,
      key: alice.sshKey.path,
      command: ['echo', 'ran-$((6*7))'],
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /interactive shells only/);
    assert.match(run.stderr, /ssh\.direct/);
    assert.doesNotMatch(run.stdout, /ran-42/);
  });

  test('sftp is refused with the reason', async () => {
    const run = await runSsh({
      program: 'sftp',
      user: pod.ssh.proxy!.username,
      port: f.sshPort,
      key: alice.sshKey.path,
      args: ['-b', '-'],
    });
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /interactive shells only/);
  });

  test('port forwarding (a direct-tcpip channel, ssh -W) is refused', async () => {
    const run = await runSsh({
      user: pod.ssh.proxy!.username,
      port: f.sshPort,
      key: alice.sshKey.path,
      args: ['-W', `127.0.0.1:${new URL(f.url).port}`],
    });
    assert.equal(run.code, 255);
    assert.match(run.stderr, /forwarding failed|administratively prohibited/);
  });

  test('a pod that stops ends its sessions, saying why', async () => {
    const other = await f.runningPod(alice);
    const running = runSsh({
      user: other.ssh.proxy!.username,
      port: f.sshPort,
      key: alice.sshKey.path,
      input: 'echo started\n',
      timeoutMs: 30_000,
    });
    const proxy = f.server.server.ssh!.proxy;
    await eventually('a shell opens', async () => proxy.openShells(other.id) > 0, 10_000);
    const stop = await f.call(alice.key, 'POST', `/v2/pods/${other.id}/action`, { action: 'stop' });
    assert.ok(stop.status < 300, JSON.stringify(stop.body));
    const run = await running;
    assert.notEqual(run.code, 0);
    assert.equal(proxy.openShells(other.id), 0);
  });

  test('ssh.direct is set when 22/tcp is published and the pod runs, pointing at the published port; null otherwise', async () => {
    const withPort = await f.runningPod(alice, { ports: ['22/tcp'] });
    const published = (withPort.runtime as { ports: Array<{ private: number; public: number }> }).ports.find(
      (p) => p.private === 22,
    )!;
    assert.deepEqual(withPort.ssh.direct, {
      host: '127.0.0.1',
      port: published.public,
      username: 'root',
      command: `ssh root@127.0.0.1 -p ${published.public}`,
    });
    assert.equal(pod.ssh.direct, null);
    await f.call(alice.key, 'POST', `/v2/pods/${withPort.id}/action`, { action: 'stop' });
    const stopped = await f.podUntil(alice, withPort.id, (p) => p.status === 'EXITED');
    assert.equal(stopped.ssh.direct, null);
  });
});
