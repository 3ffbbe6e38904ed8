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
import { afterTimersDue } from '../../test/support/timers-due.js';
import { newKeyPair, noOpenSsh, runSsh, type KeyPair } from '../../test/support/openssh.js';
import { loadHostKey } from './host-key.js';
import { SshAuthorizer } from './ssh-authorizer.js';
import { SshProxy } from './ssh-proxy.js';

const TOKEN = 'tok0123456789abcdefghijklm';
const IDLE_CHECK_MS = 20;

describe('SshProxy timeouts', { skip: noOpenSsh() }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-sshproxy-'));
  const clock = new FakeClock(Date.now());
  let key: KeyPair;
  let instance: ChildProcess;
  let proxy: SshProxy;
  let port: number;
  const makeProxy = (loginGraceMs: number): SshProxy =>
    new SshProxy({
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
      idleCheckMs: IDLE_CHECK_MS,
      loginGraceMs,
    });
  let exited: Promise<undefined>;
  before(async () => {
    key = newKeyPair();
    // a real process stands in for the pod, and the runtime's shell is the process runtime's
    instance = spawn('sleep', ['600'], { stdio: 'ignore' });
    exited = once(instance, 'exit').then(() => undefined);
    // A key exchange and login take real time (seconds on a loaded machine): the proxy that runs a
    // session keeps the default grace; only the grace's own test shortens it.
    proxy = makeProxy(30_000);
    port = await proxy.listen(0, '127.0.0.1');
  });
  after(async () => {
    await proxy?.close();
    instance?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a session quiet for idleTimeoutMs (on the injected clock) is closed, saying why', async () => {
    let printed = '';
    const run = runSsh({
      user: TOKEN,
      port,
      key: key.path,
      input: 'echo hi-$((6*7))\n',
      onStdout: (chunk) => (printed += chunk),
    });
    // the typed line and its answer pass first (traffic counts as activity at the clock's time)
    await eventually('the shell answers the typed line', async () => /hi-42/.test(printed));
    clock.advance(59_000);
    await afterTimersDue(3 * IDLE_CHECK_MS);
    assert.equal(proxy.openShells('pod1'), 1, 'not idle yet, though the idle sweep ran');
    clock.advance(2_000);
    const done = await run;
    assert.match(done.stdout, /hi-42/);
    assert.match(done.stdout, /idle for 60 s/);
    assert.equal(proxy.openShells('pod1'), 0);
  });

  test('a connection that does not even greet within the login grace is closed', async () => {
    const strict = makeProxy(300);
    const strictPort = await strict.listen(0, '127.0.0.1');
    try {
      const { connect } = await import('node:net');
      const socket = connect(strictPort, '127.0.0.1').resume();
      const started = Date.now();
      await once(socket, 'close');
      // closed by the 300 ms grace, not by anything slower (the window is for a loaded machine)
      assert.ok(Date.now() - started < 5_000);
    } finally {
      await strict.close();
    }
  });
});
