/**
 * A minimal WebSocket client (RFC 6455) for tests: opens one over HTTP/1.1, sends masked text
 * messages and reads the server's text messages. Real frames on a real socket; no library.
 */
import { randomBytes } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { Socket } from 'node:net';

export interface TestWebSocket {
  /** the 101 answer's headers */
  headers: IncomingHttpHeaders;
  send(text: string): void;
  /** the next text message from the server (rejects when the connection ends first) */
  next(): Promise<string>;
  /** resolves when the connection has closed */
  closed: Promise<void>;
  socket: Socket;
  close(): void;
}

/**
 * Opens a WebSocket to `url` (http:// or https://; `options` as node:https takes them: `ca`,
 * `lookup`, `localAddress`…); rejects with the answer's status and body when it is not upgraded.
 */
export function openWebSocket(
  url: string,
  headers: Record<string, string> = {},
  options: RequestOptions = {},
): Promise<TestWebSocket> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? httpsRequest : request)(url, {
      ...options,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        ...headers,
      },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => (body += String(c)));
      res.on('end', () =>
        reject(Object.assign(new Error(`not upgraded: ${res.statusCode} ${body}`), { status: res.statusCode, body })),
      );
    });
    req.on('error', reject);
    req.on('upgrade', (res, socket, head) => {
      const messages: string[] = [];
      const readers: Array<{ resolve(text: string): void; reject(err: Error): void }> = [];
      let pending = head;
      let ended = false;
      const closed = new Promise<void>((r) => socket.once('close', () => r()));
      const parse = (): void => {
        for (;;) {
          if (pending.length < 2) return;
          let length = pending[1]! & 0x7f;
          let offset = 2;
          if (length === 126) {
            if (pending.length < 4) return;
            length = pending.readUInt16BE(2);
            offset = 4;
          }
          if (pending.length < offset + length) return;
          const opcode = pending[0]! & 0x0f;
          const payload = pending.subarray(offset, offset + length).toString('utf8');
          pending = pending.subarray(offset + length);
          if (opcode !== 0x1) continue;
          const reader = readers.shift();
          if (reader) reader.resolve(payload);
          else messages.push(payload);
        }
      };
      socket.on('data', (data: Buffer) => {
        pending = Buffer.concat([pending, data]);
        parse();
      });
      socket.on('error', () => undefined);
      socket.once('close', () => {
        ended = true;
        for (const reader of readers.splice(0)) reader.reject(new Error('the WebSocket closed'));
      });
      parse();
      resolve({
        headers: res.headers,
        socket,
        closed,
        send(text) {
          const payload = Buffer.from(text);
          const mask = randomBytes(4);
          const masked = Buffer.from(payload);
          for (let i = 0; i < masked.length; i++) masked[i]! ^= mask[i % 4]!;
          const head =
            payload.length < 126
              ? Buffer.from([0x81, 0x80 | payload.length])
              : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 255]);
          socket.write(Buffer.concat([head, mask, masked]));
        },
        next() {
          const ready = messages.shift();
          if (ready !== undefined) return Promise.resolve(ready);
          if (ended) return Promise.reject(new Error('the WebSocket closed'));
          return new Promise((res2, rej) => readers.push({ resolve: res2, reject: rej }));
        },
        close() {
          socket.destroy();
        },
      });
    });
    req.end();
  });
}
