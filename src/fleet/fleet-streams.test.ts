/**
 * Streams between the control plane and an agent, over a real HTTP server and real upgraded
 * connections: the control plane's FleetStreams on one side, the agent's StreamDialer on the other.
 * The agent's runtime is a stand-in here (its output and shell are the Docker runtime's, tested on
 * the real engine in test/fleet.e2e.test.ts); the operation queue is a direct hand-over.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { PassThrough, Duplex } from 'node:stream';
import { until } from '../../test/support/eventually.js';
import { settle } from '../../test/support/fake-timers.js';
import { StreamDialer, type StreamOperation } from '../agent/stream-dialer.js';
import type { OutputLine, OutputQuery, ShellRequest, ShellSession } from '../runtime/runtime.js';
import { FleetStreams } from './fleet-streams.js';
import type { NewOperation, Operation } from './protocol.js';
import { STREAM_PROTOCOL, STREAM_SECRET_HEADER, TUNNEL_PROTOCOL } from './protocol.js';

const CREDENTIAL = 'ghc_host-a_secret';
const silent = { info: () => undefined, warn: () => undefined };

/** A shell that echoes what is typed, upper-cased, and exits with the code typed after "exit ". */
function echoShell(sizes: Array<[number, number]>): ShellSession {
  const input = new PassThrough();
  const output = new PassThrough();
  let resolveExit!: (code: number | null) => void;
  const exited = new Promise<number | null>((r) => (resolveExit = r));
  input.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    const exit = /exit (\d+)/.exec(text);
    if (exit) {
      output.end();
      resolveExit(Number(exit[1]));
    } else output.write(text.toUpperCase());
  });
  const stream = Duplex.from({ readable: output, writable: input });
  return { stream, resize: (cols, rows) => sizes.push([cols, rows]), exited, close: () => resolveExit(null) };
}

describe('streams between the control plane and an agent', () => {
  let server: Server;
  let url: string;
  /** The control plane's side of each dial-back, as it was upgraded. */
  const upgraded: Socket[] = [];
  let streams: FleetStreams;
  let dialer: StreamDialer;
  const sizes: Array<[number, number]> = [];
  let outputOf: (id: string, query: OutputQuery) => AsyncIterable<OutputLine>;
  const ops: Operation[] = [];
  let deliver = true;

  before(async () => {
    server = createServer((_req, res) => res.end());
    server.on('upgrade', (req, socket, head) => {
      upgraded.push(socket as Socket);
      if (!streams.handleUpgrade(req, socket, head)) socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dialer = new StreamDialer({
      runtime: {
        output: (id, query) => outputOf(id, query),
        shell: async (id: string, _request: ShellRequest) => {
          if (id !== 'pod-1') throw new Error(`instance "${id}" is not running`);
          return echoShell(sizes);
        },
      },
      // a replica that is not waiting for the session comes first: the dialer moves on
      servers: () => ['http://127.0.0.1:1', url],
      credential: CREDENTIAL,
      logger: silent,
    });
    streams = new FleetStreams({
      enqueue: async (hostId: string, op: NewOperation) => {
        const operation = { ...op, id: `op-${ops.length}`, seq: ops.length };
        ops.push(operation);
        if (deliver) {
          // the agent's poll, then its acknowledgement through a report
          void dialer.open(operation as StreamOperation).then((r) =>
            streams.acked([
              {
                opId: operation.id,
                hostId,
                seq: 0,
                kind: 'stream',
                instanceId: 'x',
                volumeId: null,
                ok: r.ok,
                error: r.error ?? null,
                at: 0,
              },
            ]),
          );
        }
        return operation;
      },
      authenticate: async (credential) => {
        if (credential !== CREDENTIAL) throw new Error('wrong');
        return { hostId: 'host-a' };
      },
      logger: silent,
      config: { connectTimeoutMs: 2_000 },
    });
  });
  after(async () => {
    streams.close();
    dialer.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test("an instance's output arrives in order and the stream ends when the agent's output ends", async () => {
    outputOf = async function* (_id, query) {
      assert.equal(query.tail, 3);
      assert.equal(query.follow, true);
      for (let i = 0; i < 1200; i++) yield { ts: 1_000 + i, line: `line ${i}` };
    };
    const got: OutputLine[] = [];
    for await (const line of streams.output('host-a', 'pod-1', {
      tail: 3,
      follow: true,
      signal: new AbortController().signal,
    }))
      got.push(line);
    assert.equal(got.length, 1200);
    assert.deepEqual(got[0], { ts: 1_000, line: 'line 0' });
    assert.deepEqual(got.at(-1), { ts: 2_199, line: 'line 1199' });
  });

  test('an instance printing long lines, and characters JSON escapes, still streams every line whole', async () => {
    const long = `${'\u0001'.repeat(30_000)}${'x'.repeat(30_000)}`;
    outputOf = async function* () {
      for (let i = 0; i < 600; i++) yield { ts: i, line: `${i} ${long}` };
    };
    const got: OutputLine[] = [];
    for await (const line of streams.output('host-a', 'pod-1', { follow: false, signal: new AbortController().signal }))
      got.push(line);
    assert.equal(got.length, 600);
    assert.ok(got.every((l, i) => l.line === `${i} ${long}`));
  });

  test('a reader that leaves ends the reading on the agent', async () => {
    let aborted = false;
    outputOf = async function* (_id, query) {
      query.signal.addEventListener('abort', () => (aborted = true));
      for (let i = 0; !query.signal.aborted; i++) {
        yield { ts: i, line: `tick ${i}` };
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    const leave = new AbortController();
    let n = 0;
    for await (const _ of streams.output('host-a', 'pod-1', { follow: true, signal: leave.signal }))
      if (++n === 5) leave.abort();
    await waitFor(() => aborted);
    assert.equal(n, 5);
  });

  test('a reader that does not keep up holds the agent back instead of being buffered for', async () => {
    let produced = 0;
    outputOf = async function* (_id, query) {
      // far more than socket buffers hold, then nothing until the reader leaves
      while (!query.signal.aborted && produced < 50_000) {
        produced++;
        yield { ts: produced, line: 'x'.repeat(1000) };
      }
      if (!query.signal.aborted) await new Promise((r) => query.signal.addEventListener('abort', r, { once: true }));
    };
    // The agent's end of the connection: the client socket its dial-back opens.
    const agentSockets: Socket[] = [];
    const onClientSocket = (message: unknown) => agentSockets.push((message as { socket: Socket }).socket);
    subscribe('net.client.socket', onClientSocket);
    const leave = new AbortController();
    const iterator = streams.output('host-a', 'pod-1', { follow: true, signal: leave.signal })[Symbol.asyncIterator]();
    try {
      await iterator.next();
      const controlPlane = upgraded.at(-1)!;
      const agent = () => agentSockets.find((s) => !s.destroyed && s.localPort === controlPlane.remotePort);
      // Held back: the agent's writes wait for a drain, and the control plane's side has stopped
      // reading (its buffer is full), so only the reader's reading can bring that drain. A control
      // plane that buffered for the reader would keep reading, and this would never hold.
      await until(
        'the agent waits on a connection the reader does not empty',
        () =>
          produced >= 20_000 ||
          (agent()?.writableNeedDrain === true && controlPlane.readableLength >= controlPlane.readableHighWaterMark),
      );
      const held = produced;
      // Every callback pending has run: an agent that did not wait for the drain would have read on.
      await settle();
      // Socket buffers hold a bounded amount (a few MB at most); an unbounded reader would be far past it.
      assert.ok(produced - held < 50, `the agent went on producing (${held} → ${produced})`);
      assert.ok(produced < 20_000, `${produced} lines were read ahead of a reader that took one`);
      assert.equal(agent()?.writableNeedDrain, true, 'the agent still waits for the reader');
    } finally {
      unsubscribe('net.client.socket', onClientSocket);
      leave.abort();
      await iterator.return?.(undefined);
    }
  });

  test('a shell carries keystrokes, output, window sizes and the exit code', async () => {
    const shell = await streams.shell('host-a', 'pod-1', { cols: 80, rows: 24 });
    let printed = '';
    shell.stream.on('data', (c: Buffer) => (printed += c.toString()));
    shell.stream.write('hello');
    await waitFor(() => printed.includes('HELLO'));
    shell.resize(120, 40);
    await waitFor(() => sizes.some(([c, r]) => c === 120 && r === 40));
    shell.stream.write('exit 3');
    assert.equal(await shell.exited, 3);
  });

  test("a shell the agent cannot open fails at once with the agent's reason", async () => {
    const started = Date.now();
    await assert.rejects(
      streams.shell('host-a', 'pod-gone', { cols: 80, rows: 24 }),
      /instance "pod-gone" is not running/,
    );
    assert.ok(Date.now() - started < 1_500, 'it waited for the connect timeout instead');
  });

  test('a reader that leaves while its stream is still being queued ends it quietly (no unhandled rejection takes the server down)', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    // the database write of the operation is under way until the test lets it end
    let queuing!: () => void;
    const queued = new Promise<void>((resolve) => (queuing = resolve));
    let written!: () => void;
    const write = new Promise<void>((resolve) => (written = resolve));
    const slow = new FleetStreams({
      enqueue: async (_hostId, op) => {
        queuing();
        await write;
        return { ...op, id: 'op-slow', seq: 1 };
      },
      authenticate: async () => ({ hostId: 'host-a' }),
      logger: silent,
    });
    try {
      const leave = new AbortController();
      const reading = (async () => {
        for await (const _ of slow.output('host-a', 'pod-1', { follow: true, signal: leave.signal }));
      })();
      await queued;
      leave.abort();
      // Node reports a rejection nobody handles once the callbacks pending have run.
      await settle();
      written();
      await reading.catch(() => undefined);
      await settle();
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      slow.close();
    }
  });

  test('a stream whose agent never dials back fails after the connect timeout, naming the host', async () => {
    deliver = false;
    try {
      await assert.rejects(
        streams.shell('host-a', 'pod-1', { cols: 80, rows: 24 }),
        /host host-a did not open the stream within 2000 ms/,
      );
    } finally {
      deliver = true;
    }
  });

  test('a dial-back with a wrong secret, a wrong credential or an unknown session is refused and pairs nothing', async () => {
    deliver = false;
    try {
      const pending = streams.shell('host-a', 'pod-1', { cols: 80, rows: 24 });
      pending.catch(() => undefined);
      await waitFor(() => ops.length > 0 && ops.at(-1)!.kind === 'stream');
      const op = ops.at(-1) as StreamOperation;
      assert.equal(await dialStatus(url, op.session, 'not-the-secret', CREDENTIAL), 404);
      assert.equal(await dialStatus(url, op.session, op.secret, 'ghc_other_x'), 401);
      assert.equal(await dialStatus(url, 'no-such-session-1234', op.secret, CREDENTIAL), 404);
      // the rightful agent still gets it
      const r = await dialer.open(op);
      assert.deepEqual(r, { ok: true });
      const shell = await pending;
      shell.close();
    } finally {
      deliver = true;
    }
  });

  test("a tunnel's session pairs only a dial-back upgrading to the tunnel's protocol, and a stream's only to the stream's", async () => {
    deliver = false;
    try {
      const waiting = new AbortController();
      const tunnel = streams.tunnel('host-a', waiting.signal);
      tunnel.catch(() => undefined);
      await waitFor(() => ops.length > 0 && (ops.at(-1) as StreamOperation).request.what === 'tunnel');
      const op = ops.at(-1) as StreamOperation;
      assert.equal(op.instanceId, '');
      assert.equal(await dialStatus(url, op.session, op.secret, CREDENTIAL, STREAM_PROTOCOL), 404);
      assert.equal(await dialStatus(url, op.session, op.secret, CREDENTIAL, TUNNEL_PROTOCOL), 101);
      (await tunnel).socket.destroy();
      const shell = streams.shell('host-a', 'pod-1', { cols: 80, rows: 24 });
      shell.catch(() => undefined);
      await waitFor(() => ops.at(-1)!.id !== op.id);
      const streamOp = ops.at(-1) as StreamOperation;
      assert.equal(await dialStatus(url, streamOp.session, streamOp.secret, CREDENTIAL, TUNNEL_PROTOCOL), 404);
      assert.deepEqual(await dialer.open(streamOp), { ok: true });
      (await shell).close();
    } finally {
      deliver = true;
    }
  });

  test('an agent that carries no tunnels answers a tunnel with why, at once', async () => {
    await assert.rejects(streams.tunnel('host-a', new AbortController().signal), /this agent opens no tunnels/);
  });
});

/** The status a dial-back is answered with (101 when paired). */
function dialStatus(
  base: string,
  session: string,
  secret: string,
  credential: string,
  protocol: string = STREAM_PROTOCOL,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/agent/v1/streams/${session}`, {
      method: 'POST',
      headers: {
        connection: 'Upgrade',
        upgrade: protocol,
        authorization: `Bearer ${credential}`,
        [STREAM_SECRET_HEADER]: secret,
        'content-length': '0',
      },
    });
    req.once('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.once('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', reject);
    req.end();
  });
}

async function waitFor(check: () => boolean, ms = 3_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
