/**
 * The Docker runtime's `shell()`: an exec with a TTY in the container (`POST /containers/{id}/exec`),
 * started hijacked (`POST /exec/{id}/start` upgraded to a raw two-way stream: with a TTY the
 * engine sends the terminal's bytes as they are, not multiplexed), resized with
 * `POST /exec/{id}/resize`, its exit code read from `GET /exec/{id}/json` once the stream ends.
 *
 * The shell is the image's `bash` when it has one, else `/bin/sh`. Closing the session closes the
 * stream: the shell reads end-of-input and exits, and the engine ends the exec with the container.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import type { ShellRequest, ShellSession } from '../runtime.js';
import { EngineConnection, parseDockerHost } from './engine-connection.js';

/** bash when the image has it (a friendlier prompt, history), else POSIX sh. */
const DOCKER_SHELL_CMD = ['/bin/sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi'];

/** How long the hijacked start may take to answer. */
const START_TIMEOUT_MS = 15_000;

export interface DockerShellTarget {
  dockerHost: string;
  containerId: string;
}

export async function openDockerShell(target: DockerShellTarget, request: ShellRequest): Promise<ShellSession> {
  const engine = new EngineConnection({ dockerHost: target.dockerHost });
  const term = request.term ?? 'xterm';
  const { body } = await engine.json<{ Id: string }>({
    method: 'POST',
    path: `/containers/${encodeURIComponent(target.containerId)}/exec`,
    body: {
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: true,
      Cmd: DOCKER_SHELL_CMD,
      Env: [`TERM=${term}`],
      ConsoleSize: [request.rows, request.cols],
    },
    doing: 'opening a shell in the container',
  });
  const execId = body.Id;
  const socket = await startHijacked(target.dockerHost, execId);
  const resize = (cols: number, rows: number): Promise<void> =>
    engine
      .json({
        method: 'POST',
        path: `/exec/${execId}/resize`,
        query: { h: rows, w: cols },
        doing: 'resizing the shell',
      })
      .then(
        () => undefined,
        () => undefined,
      );
  // ConsoleSize is ignored before API 1.42: size it once started as well, before the session is
  // handed out, so the client's first input never runs on a terminal of 0 × 0 (`stty size` failed)
  await resize(request.cols, request.rows);
  const stream = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      if (socket.writable) socket.write(chunk, () => callback());
      else callback();
    },
  });
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  const exited = new Promise<number | null>((resolve) => {
    socket.once('close', () => {
      stream.push(null);
      engine
        .json<{ ExitCode: number | null; Running: boolean }>({
          method: 'GET',
          path: `/exec/${execId}/json`,
          doing: 'reading the shell exit code',
        })
        .then(
          ({ body: info }) => resolve(info.Running ? null : info.ExitCode),
          () => resolve(null),
        )
        .finally(() => engine.close());
    });
  });
  socket.on('error', () => socket.destroy());
  return {
    stream,
    resize: (cols, rows) => void resize(cols, rows),
    exited,
    close: () => {
      // end of input first (the shell exits on it), then the connection
      socket.end();
      setTimeout(() => socket.destroy(), 1000).unref();
    },
  };
}

/** `POST /exec/{id}/start`, upgraded: answers the raw socket. */
function startHijacked(dockerHost: string, execId: string): Promise<Socket> {
  const address = parseDockerHost(dockerHost);
  const payload = Buffer.from(JSON.stringify({ Detach: false, Tty: true }));
  return new Promise((resolve, reject) => {
    const req: ClientRequest = httpRequest({
      ...(address.socketPath ? { socketPath: address.socketPath } : { host: address.host, port: address.port }),
      method: 'POST',
      path: `/exec/${execId}/start`,
      headers: {
        'content-type': 'application/json',
        'content-length': String(payload.length),
        connection: 'Upgrade',
        upgrade: 'tcp',
      },
      agent: false,
    });
    const timer = setTimeout(
      () =>
        req.destroy(new Error(`starting the shell: the Docker Engine did not answer within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    req.once('upgrade', (_res, socket, head) => {
      clearTimeout(timer);
      if (head.length > 0) socket.unshift(head);
      socket.setNoDelay(true);
      resolve(socket);
    });
    req.once('response', (res) => {
      clearTimeout(timer);
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        reject(
          new Error(
            `starting the shell: the engine answered HTTP ${res.statusCode} instead of a stream: ${Buffer.concat(chunks).toString().slice(0, 200)}`,
          ),
        ),
      );
    });
    req.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`starting the shell: ${err.message}`));
    });
    req.end(payload);
  });
}
