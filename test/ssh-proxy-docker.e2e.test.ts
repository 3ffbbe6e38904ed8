/**
 * The SSH proxy into a container, with the real OpenSSH client: a whole server on the Docker
 * runtime (a real engine, the locally built busybox image), a pod created with startSsh, and a
 * session that runs a typed command and sees the terminal size change. Skipped, saying why, when
 * no engine answers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerEngine, noEngine, removeNamespace, testDockerRuntime, uniqueNamespace } from './support/docker.js';
import { noOpenSsh, runSsh } from './support/openssh.js';
import { startSshFixture, type SshFixture, type SshPod, type SshTenant } from './support/ssh-fixture.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

describe('the SSH proxy with OpenSSH (Docker runtime)', { skip: engine ? noOpenSsh() : noEngine() }, () => {
  const namespace = uniqueNamespace();
  let f: SshFixture;
  let alice: SshTenant;
  let pod: SshPod;
  before(async () => {
    f = await startSshFixture({
      runtime: await testDockerRuntime(namespace),
      images: {},
    });
    alice = await f.tenant('alice');
    pod = await f.runningPod(alice, { image: engine!.images.idle, gpu: undefined, cpu: { id: 'cpu3c', vcpuCount: 2 } });
  });
  after(async () => {
    await f?.close();
    await removeNamespace(engine!.client, namespace);
  });

  test('with a key of the account a shell in the container runs a typed command, and its terminal has the client`s size', async () => {
    const proxy = pod.ssh.proxy!;
    assert.ok(proxy, JSON.stringify(pod.ssh));
    const run = await runSsh({
      user: proxy.username,
      port: proxy.port,
      key: alice.sshKey.path,
      input: 'echo "hi-$((6*7)) $RUNPOD_POD_ID"\nstty size\nexit 3\n',
    });
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stdout, new RegExp(`hi-42 ${pod.id}`));
    // ssh -tt on a pipe asks for the default 80x24 terminal
    assert.match(run.stdout, /\b24 80\b/);
  });

  test('sftp into a container is refused with the reason', async () => {
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
});
