import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { FakeClock } from '../domain/clock.js';
import { openProcessShell } from '../runtime/process/process-shell.js';
import { eventually } from '../../test/support/eventually.js';
import { newKeyPair, noOpenSsh, runSsh, type KeyPair } from '../../test/support/openssh.js';
import { loadHostKey } from './host-key.js';
import { SshAuthorizer } from './ssh-authorizer.js';
import { SshProxy } from './ssh-proxy.js';

const TOKEN = 'tok0123456789abcdefghijklm';

describe('SshProxy timeouts', { skip: noOpenSsh() }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-sshproxy-'));
  const clock = new FakeClock(Date.now());
  let key: KeyPair;
  let instance: ChildProcess;
  let proxy: SshProxy;
  let port: number;
  before(async () => {
    key = newKeyPair();
    // a real process stands in for the pod, and the runtime's shell is the process runtime's
    instance = spawn('sleep', ['600'], { stdio: 'ignore' });
    const exited = once(instance, 'exit').then(() => undefined);
    proxy = new SshProxy({
      config: { idleTimeoutMs: 60_000, keepaliveIntervalMs: 0, keepaliveCountMax: 3 },
      hostKey: loadHostKey(dir).privateKey,
      authorizer: new SshAuthorizer({
        podByToken: async (token) =>
          token === TOKEN ? { id: 'pod1', accountId: 'acc1', status: 'RUNNING', startSsh: true } : null,
        keysOf: async (accountId) => (accountId === 'acc1' ? [key.publicKey] : []),
      }),
      runtime: { shell: (id, request) => openProcessShell(id, { pid: instance.pid!, exited }, request) },
      clock,
      logger: pino({ level: process.env.GANTRY_TEST_LOG ?? 'silent' }),
      idleCheckMs: 20,
      loginGraceMs: 300,
    });
    port = await proxy.listen(0, '127.0.0.1');
  });
  after(async () => {
    await proxy?.close();
    instance?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a session quiet for idleTimeoutMs (on the injected clock) is closed, saying why', async () => {
    const run = runSsh({ user: TOKEN, port, key: key.path, input: 'echo hi-$((6*7))\n', timeoutMs: 20_000 });
    await eventually('a shell opens', async () => proxy.openShells('pod1') > 0, 10_000);
    // the typed line and its echo pass first (traffic counts as activity at the clock's time)
    await new Promise((r) => setTimeout(r, 500));
    clock.advance(59_000);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(proxy.openShells('pod1'), 1, 'not idle yet');
    clock.advance(2_000);
    const done = await run;
    assert.match(done.stdout, /hi-42/);
    assert.match(done.stdout, /idle for 60 s/);
    assert.equal(proxy.openShells('pod1'), 0);
  });

  test('a connection that does not even greet within the login grace is closed', async () => {
    const { connect } = await import('node:net');
    const socket = connect(port, '127.0.0.1').resume();
    const started = Date.now();
    await once(socket, 'close');
    assert.ok(Date.now() - started < 5_000);
  });
});
