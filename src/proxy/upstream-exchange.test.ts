/**
 * The pod proxy's raw exchange (upstream-exchange.ts, pod-connections.ts) between a real HTTP
 * client and a real TCP server playing the pod, byte for byte: what a broken or hostile pod sends,
 * bodies cut short, and a slow client reading a large answer whole while the connection's one read
 * buffer is reused under it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { dialTcp } from '../runtime/dial.js';
import { PodConnections } from './pod-connections.js';
import type { UpstreamExchange } from './upstream-exchange.js';
import { runExchange } from './exchange-run.js';

/** more than loopback's socket buffers hold, so the proxy's writes to the slow client wait */
const BIG = 32 * 1024 * 1024;
const pattern = Buffer.alloc(BIG);
for (let i = 0; i < BIG; i++) pattern[i] = (i * 7 + (i >> 13)) % 251;

/** What the pod answers, by the request's path. */
function answer(socket: Socket, path: string): void {
  if (path === '/ok') socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  else if (path === '/chunked')
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n');
  else if (path === '/interim')
    socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal');
  else if (path === '/smuggle')
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nok');
  else if (path === '/cut') socket.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b');
  else if (path === '/bad-chunk') socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX');
  else if (path === '/extra') socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n');
  else if (path === '/keep-none')
    socket.write('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=0\r\nContent-Length: 2\r\n\r\nok');
  else if (path === '/until-close') socket.end('HTTP/1.1 200 OK\r\n\r\nall of it');
  else if (path === '/big') {
    socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG}\r\n\r\n`);
    socket.write(pattern);
  } else socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
}

let pod: TcpServer;
let proxy: Server;
let proxyPort = 0;
let podConnections = 0;
// idle connections kept a minute: the tests count reuses, whatever the machine's load
const connections = new PodConnections(
  (_podId, port, onread) => dialTcp('127.0.0.1', port, 'the test pod', { timeoutMs: 5_000, onread }),
  60_000,
);

before(async () => {
  pod = createTcpServer((socket) => {
    podConnections++;
    let seen = '';
    let closeAtNext = false;
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      for (let end = seen.indexOf('\r\n\r\n'); end !== -1; end = seen.indexOf('\r\n\r\n')) {
        const path = seen.slice(0, end).split(' ')[1]!;
        seen = seen.slice(end + 4);
        // a server closing its idle connection just as the next request arrives on it
        if (closeAtNext) return void socket.destroy();
        closeAtNext = path === '/then-close';
        answer(socket, closeAtNext ? '/ok' : path);
      }
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => pod.listen(0, '127.0.0.1', resolve));
  const podPort = (pod.address() as { port: number }).port;
  proxy = createServer((req, res) => {
    void connections.take('pod', podPort).then((conn) => {
      let exchange: UpstreamExchange | null = null;
      res.once('close', () => {
        if (!res.writableFinished) exchange?.abort();
      });
      runExchange(
        connections,
        conn,
        {
          req,
          res,
          path: req.url ?? '/',
          headers: {
            Host: 'pod',
            ...(req.headers['content-length'] ? { 'Content-Length': req.headers['content-length'] } : {}),
          },
          prefix: '',
          idleTimeoutMs: 0,
          bytesIn: () => {},
          head: () => {},
          failed: (err) => {
            const why = 'refused' in err ? err.refused : err.message;
            res.writeHead(502, { 'content-length': Buffer.byteLength(why) }).end(why);
          },
        },
        (started) => (exchange = started),
      );
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyPort = (proxy.address() as { port: number }).port;
});

after(async () => {
  connections.close();
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await new Promise((resolve) => pod.close(resolve));
});

/** GET `path` (or POST `body`) through the proxy: status and body, or 'cut' when the answer ended short. `slow`: pause at each read. */
function get(path: string, slow = false, body?: string): Promise<{ status: number; body: Buffer } | 'cut'> {
  return new Promise((resolve) => {
    const method = body === undefined ? 'GET' : 'POST';
    const req = request({ host: '127.0.0.1', port: proxyPort, path, method, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        parts.push(chunk);
        // slow: nothing read for a while (the socket buffers between fill), then pauses as it goes
        if (slow && (parts.length === 1 || parts.length % 8 === 0)) {
          res.pause();
          setTimeout(() => res.resume(), parts.length === 1 ? 300 : 1);
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
      res.on('aborted', () => resolve('cut'));
      res.on('error', () => resolve('cut'));
    });
    req.on('error', () => resolve('cut'));
    req.end(body);
  });
}

const text = async (path: string, body?: string): Promise<string> => {
  const got = await get(path, false, body);
  assert.notEqual(got, 'cut', path);
  return `${(got as { status: number }).status} ${(got as { body: Buffer }).body.toString()}`;
};

test('answers framed by length, by chunks and by the connection’s end pass whole, an interim answer is skipped, and a kept connection is reused', async () => {
  const before = podConnections;
  assert.equal(await text('/ok'), '200 ok');
  assert.equal(await text('/chunked'), '200 ok');
  assert.equal(await text('/interim'), '200 final');
  assert.equal(await text('/ok'), '200 ok');
  assert.equal(podConnections - before, 1, 'one connection carried all four');
  assert.equal(await text('/until-close'), '200 all of it');
});

test('a pod’s head with both Content-Length and Transfer-Encoding is answered 502 with why, and never passed on', async () => {
  assert.match(await text('/smuggle'), /^502 it sent both Content-Length and Transfer-Encoding/);
  assert.equal(await text('/ok'), '200 ok', 'the proxy goes on');
});

test('a body cut short of its Content-Length, or whose chunk framing breaks, ends the client’s answer short', async () => {
  assert.equal(await get('/cut'), 'cut');
  assert.equal(await get('/bad-chunk'), 'cut');
  assert.equal(await text('/ok'), '200 ok');
});

test('bytes a pod sends past its answer close that connection: the next request gets a new one', async () => {
  assert.equal(await text('/extra'), '200 ok');
  const before = podConnections;
  assert.equal(await text('/ok'), '200 ok');
  assert.equal(podConnections - before, 1);
});

test('a slow client gets a large answer byte for byte while the connection’s read buffer is reused under it', async () => {
  const got = await get('/big', true);
  assert.notEqual(got, 'cut');
  const body = (got as { body: Buffer }).body;
  assert.equal(body.length, BIG);
  assert.equal(createHash('sha256').update(body).digest('hex'), createHash('sha256').update(pattern).digest('hex'));
  assert.equal(await text('/ok'), '200 ok');
});

test('a GET on a kept connection its server closed as the request came goes once more on a new connection, and is answered', async () => {
  assert.equal(await text('/then-close'), '200 ok');
  const before = podConnections;
  assert.equal(await text('/ok'), '200 ok', 'sent again rather than answered 502');
  assert.equal(podConnections - before, 1, 'on one new connection');
});

test('a request with a body on a kept connection its server closed is never sent twice: 502', async () => {
  assert.equal(await text('/then-close'), '200 ok');
  const before = podConnections;
  assert.match(await text('/ok', 'a body'), /^502 /);
  assert.equal(podConnections - before, 0, 'no new connection was made for it');
  assert.equal(await text('/ok'), '200 ok');
});

test('a connection whose server says it keeps nothing idle (Keep-Alive: timeout=0) is not kept: the next request gets a new one', async () => {
  assert.equal(await text('/keep-none'), '200 ok');
  const before = podConnections;
  assert.equal(await text('/ok'), '200 ok');
  assert.equal(podConnections - before, 1);
});
