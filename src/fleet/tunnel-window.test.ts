/**
 * A stream's window growing over a link with a round trip (tunnel-stream.ts, docs/fleet.md "The
 * tunnel"). The loopback has no round trip to speak of, so the two ends of these tunnels are joined
 * by a test shim, not a socket: a link that delivers each write 20 ms later each way (a 40 ms round
 * trip, a WAN's) and takes writes at once, as a long link's buffers do. It also reads the frames
 * going by, to count the senders' `blocked` frames. The muxes on its ends are the real ones.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { until } from '../../test/support/eventually.js';
import { INITIAL_TUNNEL_WINDOW, TUNNEL_FRAME, TunnelDecoder } from './tunnel-frames.js';
import { TunnelMux } from './tunnel-mux.js';
import type { TunnelStream } from './tunnel-stream.js';

const DELAY_MS = 20;
const MAX_WINDOW = 4 * 1024 * 1024;

/** Two ends of a link delaying every write by `ms`; `blocked[i]` counts the blocked frames end i received. */
function delayedLink(ms: number) {
  const ends: Duplex[] = [];
  const blocked = [0, 0];
  const decoders = [new TunnelDecoder(), new TunnelDecoder()];
  const make = (i: number) =>
    new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, callback) {
        setTimeout(() => {
          const to = 1 - i;
          for (const f of decoders[to]!.push(Buffer.from(chunk)))
            if (f.type === TUNNEL_FRAME.blocked) blocked[to]! += 1;
          if (!ends[to]!.destroyed) ends[to]!.push(chunk);
        }, ms);
        callback();
      },
      final(callback) {
        setTimeout(() => ends[1 - i]!.push(null), ms);
        callback();
      },
      destroy(err, callback) {
        setTimeout(() => ends[1 - i]!.destroy(), ms);
        callback(err);
      },
    });
  ends.push(make(0), make(1));
  return { control: ends[0]!, agent: ends[1]!, blocked };
}

/** A control side and an agent side over the delayed link; the agent sends each stream `bytes` of `fill`. */
function wanTunnel(bytes: number) {
  const link = delayedLink(DELAY_MS);
  const agentSides = new Map<string, TunnelStream>();
  const control = new TunnelMux(link.control, Buffer.alloc(0), { side: 'control', maxWindow: MAX_WINDOW });
  const agent: TunnelMux = new TunnelMux(link.agent, Buffer.alloc(0), {
    side: 'agent',
    maxWindow: MAX_WINDOW,
    accept: (stream, target) => {
      stream.on('error', () => undefined);
      agent.opened(stream);
      agentSides.set(target.instanceId, stream);
      stream.end(Buffer.alloc(bytes, target.instanceId.length));
      stream.resume();
    },
  });
  return { control, agent, agentSides, link };
}

const drain = async (s: TunnelStream): Promise<number> => {
  let n = 0;
  for await (const c of s) n += (c as Buffer).length;
  return n;
};

test('over a 40 ms round trip, a stream whose reader keeps up grows its window past 256 KiB, up to the maximum', async () => {
  const total = 24 * 1024 * 1024;
  const t = wanTunnel(total);
  const s = await t.control.open({ instanceId: 'download', port: 1 }, 10_000);
  s.on('error', () => undefined);
  assert.equal(s.window, INITIAL_TUNNEL_WINDOW);
  assert.equal(await drain(s), total);
  assert.ok(t.link.blocked[0]! >= 2, `the agent said it waited for credit (${t.link.blocked[0]} times)`);
  assert.equal(s.window, MAX_WINDOW, `the window grew from ${INITIAL_TUNNEL_WINDOW} to ${s.window}, its maximum`);
  t.control.close();
});

test("a stalled reader holds at most its current window, which stops growing, and the tunnel's other streams go on", async () => {
  const total = 24 * 1024 * 1024;
  const t = wanTunnel(total);
  const slow = await t.control.open({ instanceId: 'slow', port: 1 }, 10_000);
  slow.on('error', () => undefined);
  // read until the window grew, then stop reading
  let read = 0;
  await new Promise<void>((resolve) => {
    const onData = (c: Buffer) => {
      read += c.length;
      if (slow.window > INITIAL_TUNNEL_WINDOW) {
        slow.off('data', onData);
        slow.pause();
        resolve();
      }
    };
    slow.on('data', onData);
  });
  // The sender fills the window and then waits, saying so. (Its `blocked` frames sent before the
  // stall were still in flight, and may have grown the window once more: that window is the bound.)
  const blockedBefore = t.link.blocked[0]!;
  await until(
    'the stalled stream filled its window and its sender said it waits',
    async () => slow.unread + slow.readableLength >= slow.window - 64 * 1024 && t.link.blocked[0]! > blockedBefore + 1,
  );
  await new Promise((resolve) => setImmediate(resolve));
  const windowStalled = slow.window;
  const held = slow.unread + slow.readableLength;
  assert.ok(held <= windowStalled + slow.readableHighWaterMark, `held ${held} bytes, window ${windowStalled}`);
  assert.ok(windowStalled < MAX_WINDOW, `the window stopped short of the maximum (${windowStalled})`);
  assert.ok(t.agentSides.get('slow')!.writableLength > 0, 'the rest waits at its sender');
  // another stream on the same tunnel carries all its bytes meanwhile
  const other = await t.control.open({ instanceId: 'other-stream', port: 1 }, 10_000);
  other.on('error', () => undefined);
  assert.equal(await drain(other), total);
  assert.equal(slow.unread + slow.readableLength, held, 'the stalled stream got nothing more');
  assert.equal(slow.window, windowStalled, 'a window does not grow while its reader is stalled');
  // reading again lets the rest come
  slow.resume();
  assert.equal(read + (await drain(slow)), total);
  t.control.close();
});
