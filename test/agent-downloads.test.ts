/**
 * The agent's public downloads are bounded (`fleet.downloads`, src/fleet/download-gate.ts): a real
 * server sends a 64 MiB stand-in for the executable to real HTTP clients that stop reading, so
 * each download holds its slot; past a client address's bound the next one is 429 problem+json
 * with Retry-After, while another address is served, and a slot comes back when its download
 * ends or its client goes away.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { eventually } from './support/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'gantry-agent-downloads-'));
const FILE = 'gantry-agent-linux-x64';
writeFileSync(join(dir, FILE), '');
truncateSync(join(dir, FILE), 64 << 20);
process.env.GANTRY_AGENT_DOWNLOAD_DIR = dir;

interface Held {
  req: ClientRequest;
  res: IncomingMessage;
}

describe('the agent’s public downloads', () => {
  let server: ListeningServer;
  let url: string;
  const held: Held[] = [];

  /** Starts a download from `from` and stops reading it once its head is in (the server's writes then wait). */
  const hold = (from: string) =>
    new Promise<Held>((resolve, reject) => {
      const req = request(`${url}/agent/v1/download/${FILE}`, { localAddress: from, agent: false }, (res) => {
        res.pause();
        const h = { req, res };
        held.push(h);
        resolve(h);
      });
      req.on('error', reject);
      req.end();
    });
  const fetchFrom = (from: string, method = 'GET') =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>((resolve, reject) => {
      const req = request(`${url}/agent/v1/download/${FILE}`, { method, localAddress: from, agent: false }, (res) => {
        let bytes = 0;
        let text = '';
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (text.length < 4096) text += c.toString('utf8', 0, Math.min(c.length, 4096));
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: res.statusCode === 200 ? String(bytes) : text,
          }),
        );
      });
      req.on('error', reject);
      req.end();
    });

  before(async () => {
    server = await startListeningServer({ fleet: { downloads: { maxPerClient: 2, maxConcurrent: 3 } } });
    url = server.server.url;
  });
  after(async () => {
    for (const h of held) h.req.destroy();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('an address receiving its bound of downloads gets 429 with Retry-After for the next, saying which bound', async () => {
    await hold('127.0.0.1');
    await hold('127.0.0.1');
    const third = await fetchFrom('127.0.0.1');
    assert.equal(third.status, 429, third.body);
    assert.equal(third.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(third.headers['retry-after'], '5');
    assert.match(JSON.parse(third.body).detail, /fleet\.downloads\.maxPerClient 2/);
  });

  test('a HEAD takes no slot, and another address is served while the first is at its bound', async () => {
    const head = await fetchFrom('127.0.0.1', 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], String(64 << 20));
    await hold('127.0.0.3');
  });

  test('past the server’s own bound every address waits, whatever its own count', async () => {
    const fourth = await fetchFrom('127.0.0.4');
    assert.equal(fourth.status, 429, fourth.body);
    assert.match(JSON.parse(fourth.body).detail, /fleet\.downloads\.maxConcurrent 3/);
  });

  test('a download whose client goes away gives its slot back, and a whole download is served', async () => {
    const first = held.shift()!;
    first.req.destroy();
    const whole = await eventually('a slot freed by the client that went away', async () => {
      const got = await fetchFrom('127.0.0.1');
      return got.status === 200 ? got : null;
    });
    assert.equal(whole.body, String(64 << 20));
  });
});
