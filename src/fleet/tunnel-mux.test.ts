/**
 * The tunnel's framing and per-stream credit (tunnel-frames.ts, tunnel-stream.ts, tunnel-mux.ts),
 * over real TCP connections on the loopback: both sides of a tunnel, or one side facing raw bytes
 * that break the protocol the way a compromised peer would.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { until } from '../../test/support/eventually.js';
import { DialTimeout } from '../runtime/dial.js';
import {
  MAX_TUNNEL_PAYLOAD,
  TUNNEL_FRAME,
  TunnelDecoder,
  TunnelProtocolError,
  encodeTunnelFrame,
  windowFrame,
  type TunnelFrame,
} from './tunnel-frames.js';
import { TunnelMux, type TunnelMuxOptions } from './tunnel-mux.js';
import type { TunnelStream } from './tunnel-stream.js';
import { afterTimersDue } from '../../test/support/timers-due.js';

const servers: Server[] = [];
after(() => servers.forEach((s) => s.close()));

/** Two ends of a real TCP connection. */
async function socketPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const address = server.address() as { port: number };
  const client = connect(address.port, '127.0.0.1');
  await new Promise((resolve) => client.once('connect', resolve));
  return [client, await accepted];
}

/** A control side and an agent side over one connection; the agent answers opens with `accept`. */
async function tunnel(accept: TunnelMuxOptions['accept'], options: Partial<TunnelMuxOptions> = {}) {
  const [a, b] = await socketPair();
  const closed: Array<Error | null> = [];
  const control = new TunnelMux(a, Buffer.alloc(0), { side: 'control', ...options, onClose: (e) => closed.push(e) });
  const agent = new TunnelMux(b, Buffer.alloc(0), {
    side: 'agent',
    ...options,
    accept: (stream, target) => {
      stream.on('error', () => undefined);
      accept!(stream, target);
    },
  });
  return { control: listening(control), agent, closed };
}

/** A control side facing raw bytes: what a broken or hostile agent sends. */
async function facingRaw() {
  const [a, raw] = await socketPair();
  const closed: Array<Error | null> = [];
  const control = listening(new TunnelMux(a, Buffer.alloc(0), { side: 'control', onClose: (e) => closed.push(e) }));
  const seen: Buffer[] = [];
  raw.on('data', (c: Buffer) => seen.push(c));
  raw.on('error', () => undefined);
  return { control, raw, closed, seen };
}

/** The mux, its streams listened to for errors as their users do (the tests check them otherwise). */
function listening(mux: TunnelMux): TunnelMux {
  const open = mux.open.bind(mux);
  mux.open = async (target, timeoutMs) => {
    const stream = await open(target, timeoutMs);
    stream.on('error', () => undefined);
    return stream;
  };
  return mux;
}

const read = async (s: TunnelStream): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

describe('tunnel frames', () => {
  test('a frame split across chunks is decoded whole, and several in one chunk each', () => {
    const d = new TunnelDecoder();
    const one = encodeTunnelFrame(TUNNEL_FRAME.data, 7, Buffer.from('hello'));
    const two = windowFrame(7, 1000);
    assert.deepEqual(d.push(one.subarray(0, 4)), []);
    assert.deepEqual(d.push(one.subarray(4, 11)), []);
    const frames = d.push(Buffer.concat([one.subarray(11), two]));
    assert.equal(frames.length, 2);
    assert.equal(frames[0]!.payload.toString(), 'hello');
    assert.equal(frames[1]!.payload.readUInt32BE(0), 1000);
    assert.equal(d.buffered, 0);
  });

  test('frames read one byte at a time or in 64 KiB reads decode alike, and a payload shares no memory with its read', () => {
    const payloads = [Buffer.alloc(MAX_TUNNEL_PAYLOAD, 1), Buffer.from('x'), Buffer.alloc(40_000, 2)];
    const wire = Buffer.concat([
      ...payloads.map((p, i) => encodeTunnelFrame(TUNNEL_FRAME.data, i + 1, p)),
      encodeTunnelFrame(TUNNEL_FRAME.close, 3),
    ]);
    for (const size of [1, 7, 64 * 1024]) {
      const d = new TunnelDecoder();
      const frames: TunnelFrame[] = [];
      const reads: Buffer[] = [];
      for (let at = 0; at < wire.length; at += size) {
        const read = Buffer.from(wire.subarray(at, at + size));
        reads.push(read);
        frames.push(...d.push(read));
      }
      for (const read of reads) read.fill(0); // the reads' memory reused: the payloads keep their bytes
      assert.equal(frames.length, 4, `reads of ${size}`);
      payloads.forEach((p, i) => assert.ok(frames[i]!.payload.equals(p), `payload ${i} in reads of ${size}`));
      assert.equal(frames[3]!.type, TUNNEL_FRAME.close);
      assert.equal(d.buffered, 0);
    }
  });

  test('a frame announcing more than the limit breaks the protocol before its bytes arrive', () => {
    const head = Buffer.alloc(9);
    head.writeUInt8(TUNNEL_FRAME.data, 0);
    head.writeUInt32BE(1, 1);
    head.writeUInt32BE(MAX_TUNNEL_PAYLOAD + 1, 5);
    assert.throws(() => new TunnelDecoder().push(head), TunnelProtocolError);
  });

  test('an unknown type, stream 0, an empty data frame or a window of other than 4 bytes breaks the protocol', () => {
    const frame = (type: number, stream: number, length: number) => {
      const b = Buffer.alloc(9 + length);
      b.writeUInt8(type, 0);
      b.writeUInt32BE(stream, 1);
      b.writeUInt32BE(length, 5);
      return b;
    };
    for (const bad of [
      frame(99, 1, 0),
      frame(TUNNEL_FRAME.data, 0, 1),
      frame(TUNNEL_FRAME.data, 1, 0),
      frame(TUNNEL_FRAME.window, 1, 3),
    ])
      assert.throws(() => new TunnelDecoder().push(bad), TunnelProtocolError);
  });

  test('nothing over the limit can be encoded', () => {
    assert.throws(() => encodeTunnelFrame(TUNNEL_FRAME.data, 1, Buffer.alloc(MAX_TUNNEL_PAYLOAD + 1)), RangeError);
  });
});

describe('a tunnel of streams with credit windows', () => {
  test('a stream carries bytes both ways, more than its window, and ends when both sides end', async () => {
    const t = await tunnel((stream, target) => {
      assert.deepEqual(target, { instanceId: 'pod-1', port: 8000 });
      t.agent.opened(stream);
      // the agent's side echoes what it reads
      stream.pipe(stream);
    });
    const s = await t.control.open({ instanceId: 'pod-1', port: 8000 }, 10_000);
    const sent = Buffer.alloc(3 * 1024 * 1024 + 17, 0x5a);
    s.end(sent);
    const back = await read(s);
    assert.equal(back.length, sent.length);
    assert.ok(back.equals(sent));
    await until('both sides forgot the stream', async () => t.control.streams === 0 && t.agent.streams === 0);
    t.control.close();
  });

  test("a stream whose reader stops does not stop the tunnel's other streams", async () => {
    const window = 64 * 1024;
    const total = 4 * 1024 * 1024;
    const agentSides = new Map<string, TunnelStream>();
    const t = await tunnel(
      (stream, target) => {
        t.agent.opened(stream);
        agentSides.set(target.instanceId, stream);
        // each stream is sent `total` bytes by the agent
        stream.end(Buffer.alloc(total, target.instanceId === 'slow' ? 1 : 2));
        stream.resume();
      },
      { window },
    );
    const slow = await t.control.open({ instanceId: 'slow', port: 1 }, 10_000);
    const fast = await t.control.open({ instanceId: 'fast', port: 1 }, 10_000);
    slow.pause();
    const got = await read(fast);
    assert.equal(got.length, total, 'the other stream got all its bytes while the slow one was not read');
    // The slow stream holds at most its window here, and the rest waits at its sender.
    const held = slow.unread + slow.readableLength;
    assert.ok(
      held <= window + slow.readableHighWaterMark,
      `the control plane holds ${held} bytes of it, within its window`,
    );
    assert.ok(agentSides.get('slow')!.writableLength > 0, "the slow stream's sender holds the rest");
    // Reading it again lets the rest come.
    assert.equal((await read(slow)).length, total);
    t.control.close();
  });

  test('an open the agent does not answer in time is a dial timeout, and the tunnel goes on', async () => {
    let first = true;
    const t = await tunnel((stream) => {
      if (first) first = false;
      else t.agent.opened(stream);
    });
    await assert.rejects(t.control.open({ instanceId: 'p', port: 1 }, 150), DialTimeout);
    const s = await t.control.open({ instanceId: 'p', port: 1 }, 10_000);
    assert.equal(s.destroyed, false);
    t.control.close();
  });

  test('a refusal reaches the opener with its reason; a timed-out dial on the host is a dial timeout', async () => {
    const t = await tunnel((stream, target) =>
      t.agent.refuse(stream, `instance "${target.instanceId}" is not running here`, target.port === 2),
    );
    await assert.rejects(
      t.control.open({ instanceId: 'other', port: 1 }, 10_000),
      /instance "other" is not running here/,
    );
    await assert.rejects(t.control.open({ instanceId: 'other', port: 2 }, 10_000), DialTimeout);
    assert.equal(t.control.closed, false);
    t.control.close();
  });

  test('opens past the streams limit are refused, the streams open go on', async () => {
    const t = await tunnel((stream) => t.agent.opened(stream), { maxStreams: 2 });
    const a = await t.control.open({ instanceId: 'p', port: 1 }, 10_000);
    await t.control.open({ instanceId: 'p', port: 1 }, 10_000);
    await assert.rejects(t.control.open({ instanceId: 'p', port: 1 }, 10_000), /already carries 2 streams/);
    a.destroy();
    await until('the agent forgot the reset stream', async () => t.agent.streams === 1);
    await t.control.open({ instanceId: 'p', port: 1 }, 10_000);
    t.control.close();
  });

  test('a stream on which nothing moves for its timeout says so, as a socket does (the proxy idles it out)', async () => {
    const t = await tunnel((stream) => {
      t.agent.opened(stream);
      stream.pipe(stream);
    });
    const s = await t.control.open({ instanceId: 'p', port: 1 }, 10_000);
    let timedOut = false;
    s.setTimeout(150, () => (timedOut = true));
    s.write('ping');
    const [echoed] = (await once(s, 'data')) as [Buffer];
    assert.equal(String(echoed), 'ping');
    await until('the idle stream timed out', async () => timedOut);
    t.control.close();
  });

  test('the tunnel closing ends every stream on it with an error', async () => {
    const t = await tunnel((stream) => t.agent.opened(stream));
    const s = await t.control.open({ instanceId: 'p', port: 1 }, 10_000);
    const failed = new Promise<Error>((resolve) => s.prependListener('error', resolve));
    t.agent.close();
    assert.match((await failed).message, /tunnel/);
    await until('the control side saw the tunnel end', async () => t.closed.length === 1);
  });
});

describe('what a broken or hostile agent sends ends its tunnel, never the process', () => {
  const openOne = async (r: Awaited<ReturnType<typeof facingRaw>>) => {
    const opening = r.control.open({ instanceId: 'p', port: 1 }, 10_000);
    opening.catch(() => undefined);
    await until('the open reached the agent', async () => Buffer.concat(r.seen).length >= 9);
    r.raw.write(encodeTunnelFrame(TUNNEL_FRAME.opened, 1));
    return opening;
  };

  test('data past the credit a stream was granted ends the tunnel', async () => {
    const r = await facingRaw();
    const s = await openOne(r);
    s.pause();
    s.on('error', () => undefined);
    for (let sent = 0; sent <= 256 * 1024; sent += 32 * 1024)
      r.raw.write(encodeTunnelFrame(TUNNEL_FRAME.data, 1, Buffer.alloc(32 * 1024)));
    await until('the tunnel ended', async () => r.closed.length === 1);
    assert.match(r.closed[0]!.message, /more than the credit/);
    assert.equal(s.destroyed, true);
  });

  test('a grant past the window ends the tunnel', async () => {
    const r = await facingRaw();
    await openOne(r);
    r.raw.write(windowFrame(1, 1));
    await until('the tunnel ended', async () => r.closed.length === 1);
    assert.match(r.closed[0]!.message, /past its window/);
  });

  test('an agent that announces no growing windows (an older one) is sent 256 KiB of a stream at most and no blocked frame', async () => {
    const r = await facingRaw();
    const s = await openOne(r);
    const open = new TunnelDecoder().push(Buffer.concat(r.seen))[0]!;
    assert.deepEqual(
      JSON.parse(open.payload.toString()),
      { instanceId: 'p', port: 1, flow: 2 },
      'the open announces it',
    );
    s.write(Buffer.alloc(1024 * 1024, 7));
    const decoder = new TunnelDecoder();
    const frames: TunnelFrame[] = [];
    let at = 0;
    await until('the first window was sent', async () => {
      const all = Buffer.concat(r.seen);
      frames.push(...decoder.push(all.subarray(at)));
      at = all.length;
      return frames.filter((f) => f.type === TUNNEL_FRAME.data).reduce((n, f) => n + f.payload.length, 0) >= 256 * 1024;
    });
    // a negative check: whatever the mux would send past the window, it sends on its own turns
    await afterTimersDue(50);
    frames.push(...decoder.push(Buffer.concat(r.seen).subarray(at)));
    const data = frames.filter((f) => f.type === TUNNEL_FRAME.data).reduce((n, f) => n + f.payload.length, 0);
    assert.equal(data, 256 * 1024);
    assert.equal(frames.filter((f) => f.type === TUNNEL_FRAME.blocked).length, 0);
    r.control.close();
  });

  test('a frame naming a stream never opened ends the tunnel', async () => {
    const r = await facingRaw();
    await openOne(r);
    r.raw.write(encodeTunnelFrame(TUNNEL_FRAME.data, 2, Buffer.from('not yours')));
    await until('the tunnel ended', async () => r.closed.length === 1);
    assert.match(r.closed[0]!.message, /never opened/);
  });

  test('an agent opening a stream ends the tunnel', async () => {
    const r = await facingRaw();
    r.raw.write(encodeTunnelFrame(TUNNEL_FRAME.open, 1, { instanceId: 'p', port: 1 }));
    await until('the tunnel ended', async () => r.closed.length === 1);
    assert.match(r.closed[0]!.message, /may not open/);
  });

  test('bytes that are no frame end the tunnel', async () => {
    const r = await facingRaw();
    const opening = r.control.open({ instanceId: 'p', port: 1 }, 10_000);
    r.raw.write('HTTP/1.1 200 OK\r\n\r\n');
    await assert.rejects(opening, /protocol/);
    assert.equal(r.closed.length, 1);
  });

  test('data after a stream was reset here is dropped, the tunnel goes on', async () => {
    const r = await facingRaw();
    const s = await openOne(r);
    s.destroy();
    r.raw.write(encodeTunnelFrame(TUNNEL_FRAME.data, 1, Buffer.from('in flight')));
    const next = r.control.open({ instanceId: 'p', port: 1 }, 10_000);
    await until('the second open reached the agent', async () =>
      Buffer.concat(r.seen).includes(Buffer.from([TUNNEL_FRAME.open, 0, 0, 0, 2])),
    );
    r.raw.write(encodeTunnelFrame(TUNNEL_FRAME.opened, 2));
    await next;
    assert.equal(r.closed.length, 0);
    r.control.close();
  });
});
