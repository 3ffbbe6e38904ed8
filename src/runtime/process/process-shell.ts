/**
 * The process runtime's `shell()`: `/bin/sh` on a real terminal (node-pty), in the instance
 * process's working folder and with the environment the process was started with (both read from
 * `/proc/<pid>`), so a session sees what the pod's process sees. The shell runs as the server's
 * user, as the instance does (the process runtime isolates nothing: docs/runtimes.md). It ends
 * when the instance process ends.
 */
import { readSync } from 'node:fs';
import { readFile, readlink } from 'node:fs/promises';
import type { IPty } from 'node-pty';
import { Duplex } from 'node:stream';
import type { ShellRequest, ShellSession } from '../runtime.js';

/** The live process a shell is opened beside. */
export interface ShellTarget {
  /** the instance process (it leads its own group) */
  pid: number;
  /** resolves once it ended */
  exited: Promise<void>;
}

/** The shell the session runs. */
const PROCESS_SHELL = '/bin/sh';

/** How long a shell may take to end after SIGHUP before its group is killed. */
const HANGUP_GRACE_MS = 2000;

/** `NAME=value\0…` of `/proc/<pid>/environ`. */
export function parseEnviron(raw: Buffer): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of raw.toString('utf8').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

export async function openProcessShell(
  id: string,
  target: ShellTarget | null,
  request: ShellRequest,
): Promise<ShellSession> {
  if (!target)
    throw new Error(`pod "${id}" runs no process here: it is not running, or its image runs as a placeholder`);
  let env: Record<string, string>;
  let cwd: string;
  try {
    env = parseEnviron(await readFile(`/proc/${target.pid}/environ`));
    cwd = await readlink(`/proc/${target.pid}/cwd`);
  } catch (err) {
    throw new Error(
      `pod "${id}" has no running process to open a shell beside (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      { cause: err },
    );
  }
  const { spawn } = await import('node-pty');
  const pty = spawn(PROCESS_SHELL, [], {
    name: request.term ?? 'xterm',
    cols: request.cols,
    rows: request.rows,
    cwd,
    env: { ...env, TERM: request.term ?? 'xterm' },
    encoding: null,
  });
  let ended = false;
  const stream = new Duplex({
    read() {
      pty.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      if (!ended) pty.write(chunk);
      callback();
    },
  });
  const output = (data: Buffer): void => {
    if (!stream.push(data)) pty.pause();
  };
  // with `encoding: null` the data is a Buffer (node-pty's typing says string)
  pty.onData((data) => output(data as unknown as Buffer));
  readToTheEnd(pty, output);
  const exited = new Promise<number | null>((resolve) => {
    pty.onExit(({ exitCode, signal }) => {
      ended = true;
      // the last output is read before the end is told
      setTimeout(() => {
        stream.push(null);
        resolve(signal ? null : exitCode);
      }, 20);
    });
  });
  const close = (): void => {
    if (ended) return;
    try {
      pty.kill('SIGHUP');
    } catch {
      // ended already
    }
    const force = setTimeout(() => {
      if (ended) return;
      try {
        process.kill(-pty.pid, 'SIGKILL');
      } catch {
        // ended already
      }
    }, HANGUP_GRACE_MS);
    force.unref();
  };
  void target.exited.then(close);
  return {
    stream,
    resize: (cols, rows) => {
      if (!ended) pty.resize(cols, rows);
    },
    exited,
    close,
  };
}

/**
 * libuv ends a terminal's stream at the hang-up that follows a short read, while the kernel may
 * still hold the last output the shell wrote before it exited (a shell told `exit` right after a
 * command loses that command's output). When node-pty's stream ends, its master is read directly
 * until the kernel answers EIO (all read: the other side is closed) and what it held is passed on.
 * This reaches into node-pty (its stream and descriptor, pinned at 1.1.0); without them it does nothing.
 */
export function readToTheEnd(pty: IPty, output: (data: Buffer) => void): void {
  const inner = pty as unknown as { _socket?: { once(event: 'end', listener: () => void): unknown }; _fd?: unknown };
  const fd = inner._fd;
  if (typeof fd !== 'number' || typeof inner._socket?.once !== 'function') return;
  inner._socket.once('end', () => {
    const buffer = Buffer.alloc(65_536);
    for (;;) {
      let read: number;
      try {
        read = readSync(fd, buffer, 0, buffer.length, null);
      } catch {
        return; // EIO: nothing more; EAGAIN: the other side is still open
      }
      if (read <= 0) return;
      output(Buffer.from(buffer.subarray(0, read)));
    }
  });
}
