import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter, once } from 'node:events';
import { openProcessShell, parseEnviron, readToTheEnd, type ShellTarget } from './process-shell.js';
import type { IPty } from 'node-pty';
import type { ShellSession } from '../runtime.js';
import { typeInto } from '../../../test/support/terminal.js';

/** A process standing in for an instance: its own env and folder. */
function instance(env: Record<string, string>): { target: ShellTarget; dir: string; stop(): void } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'gantry-shell-')));
  const child = spawn('sleep', ['60'], { cwd: dir, env, stdio: 'ignore' });
  const exited = once(child, 'exit').then(() => undefined);
  return {
    target: { pid: child.pid!, exited },
    dir,
    stop: () => (child.kill('SIGKILL'), rmSync(dir, { recursive: true, force: true })),
  };
}

const typed = (shell: ShellSession, line: string, until: RegExp): Promise<string> =>
  typeInto(shell.stream, line, until);

describe('process runtime shell', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  test('parseEnviron reads NAME=value pairs, values may hold =', () => {
    assert.deepEqual(parseEnviron(Buffer.from('A=1\0B=x=y\0\0')), { A: '1', B: 'x=y' });
  });

  test('the shell runs in the instance folder with the environment the instance process got, and a typed command answers', async () => {
    const pod = instance({ PATH: process.env.PATH ?? '/usr/bin:/bin', POD_MARK: 'mark-17' });
    try {
      const shell = await openProcessShell('p1', pod.target, { cols: 80, rows: 24, term: 'xterm' });
      const out = await typed(shell, 'echo "hi-$((6*7)) $POD_MARK $(pwd)"', /hi-42 mark-17 \S+/);
      assert.match(out, new RegExp(`hi-42 mark-17 ${pod.dir}`));
      shell.stream.write('exit 7\n');
      assert.equal(await shell.exited, 7);
    } finally {
      pod.stop();
    }
  });

  test('a window resize reaches the terminal (stty size)', async () => {
    const pod = instance({ PATH: process.env.PATH ?? '/usr/bin:/bin' });
    try {
      const shell = await openProcessShell('p1', pod.target, { cols: 80, rows: 24 });
      await typed(shell, 'stty size', /24 80/);
      shell.resize(132, 41);
      await typed(shell, 'stty size', /41 132/);
      shell.close();
      await shell.exited;
    } finally {
      pod.stop();
    }
  });

  test('the shell ends when the instance process ends', async () => {
    const pod = instance({ PATH: process.env.PATH ?? '/usr/bin:/bin' });
    const shell = await openProcessShell('p1', pod.target, { cols: 80, rows: 24 });
    pod.stop();
    const code = await Promise.race([
      shell.exited,
      new Promise((r) => setTimeout(() => r('still running'), 5000).unref()),
    ]);
    assert.notEqual(code, 'still running');
  });

  test('what the kernel still holds when the terminal stream ends early is read and passed on, in order', () => {
    // libuv may end the stream at the hang-up while the shell's last output is still in the kernel:
    // stood in for here by a file holding that output, and a stream told it ended.
    const dir = mkdtempSync(join(tmpdir(), 'gantry-drain-'));
    const last = 'reached-42\r\n# '.repeat(10_000); // more than one read's worth
    writeFileSync(join(dir, 'master'), last);
    const fd = openSync(join(dir, 'master'), 'r');
    const stream = new EventEmitter();
    const seen: Buffer[] = [];
    readToTheEnd({ _socket: stream, _fd: fd } as unknown as IPty, (b) => seen.push(b));
    assert.equal(seen.length, 0, 'nothing is read before the stream ends');
    stream.emit('end');
    assert.equal(Buffer.concat(seen).toString(), last);
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a shell told `exit` right after a command delivers that command`s output before it ends', async () => {
    const inst = instance({ PATH: process.env.PATH ?? '/usr/bin:/bin' });
    try {
      for (let round = 0; round < 20; round++) {
        const shell = await openProcessShell('pod-1', inst.target, { cols: 80, rows: 24 });
        const chunks: Buffer[] = [];
        shell.stream.on('data', (c: Buffer) => chunks.push(c));
        const ended = once(shell.stream, 'end');
        shell.stream.write('echo reached-$((6*7))\nexit\n');
        assert.equal(await shell.exited, 0);
        await ended;
        assert.match(Buffer.concat(chunks).toString(), /reached-42/, `round ${round}`);
      }
    } finally {
      inst.stop();
    }
  });

  test('an instance that runs no process is refused in words', async () => {
    await assert.rejects(openProcessShell('p1', null, { cols: 80, rows: 24 }), /runs no process/);
  });
});
