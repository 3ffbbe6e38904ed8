import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { applyRequestTimeouts, checkingIntervalMs, ConnectionCap } from './listener-limits.js';

test('slow clients are looked for every quarter of the shortest timeout, between 10 ms and 1 s', () => {
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 60_000, headersTimeoutMs: 10_000 }), 1000);
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 400, headersTimeoutMs: 300 }), 75);
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 20, headersTimeoutMs: 0 }), 10);
  assert.equal(checkingIntervalMs({ requestTimeoutMs: 0, headersTimeoutMs: 0 }), 30_000);
});

test('a listener gets the request timeouts, headers never due after the whole request', () => {
  const server = createServer();
  applyRequestTimeouts(server, {
    requestTimeoutMs: 5000,
    headersTimeoutMs: 8000,
    keepAliveTimeoutMs: 72_000,
    maxConnectionsPerClient: 1,
  });
  assert.deepEqual([server.requestTimeout, server.headersTimeout, server.keepAliveTimeout], [5000, 5000, 72_000]);
  assert.equal((server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval, 1000);
});

/** A socket as far as the cap uses one: its peer address, close, and what a refusal writes. */
class FakeSocket extends EventEmitter {
  refused = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy(): void {}
  setTimeout(): void {}
  resume(): void {}
  end(): void {
    this.refused = true;
  }
}

test('the connection cap counts every address of one IPv6 /64 as one client, and an IPv4-mapped peer as its IPv4 address', () => {
  const server = new EventEmitter() as unknown as Server;
  const accepted: string[] = [];
  server.on('connection', (socket: Socket) => accepted.push(socket.remoteAddress!));
  const cap = new ConnectionCap(1);
  cap.guard(server);
  const connect = (address: string): FakeSocket => {
    const socket = new FakeSocket(address);
    server.emit('connection', socket);
    return socket;
  };
  const first = connect('2001:db8:0:1::1');
  assert.equal(connect('2001:db8:0:1:ffff::2').refused, true, 'a second address of the same /64 is the same client');
  assert.equal(connect('2001:db8:0:2::1').refused, false, 'the next /64 is another client');
  assert.equal(cap.openFor('2001:db8:0:1::99'), 1);
  first.emit('close');
  assert.equal(connect('2001:db8:0:1::3').refused, false, 'a closed connection frees its place');

  connect('127.0.0.1');
  assert.equal(connect('::ffff:127.0.0.1').refused, true);
  assert.deepEqual(accepted, ['2001:db8:0:1::1', '2001:db8:0:2::1', '2001:db8:0:1::3', '127.0.0.1']);
});
