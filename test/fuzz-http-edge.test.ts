// The HTTP edge against hostile clients, over real listening servers and raw sockets: a client
// sending part of a request is answered 408 and cut once the request timeout passes (on the main
// and the job listener), while long-polls that wait on the *response* outlive that timeout; a
// client past its connection cap is refused 429 while other clients are served; errors Node's HTTP
// parser raises are problem+json; a client's x-request-id is kept only when safe to log.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { createTestApp, startListeningServer, type ListeningServer } from './support/harness.js';
import { freePort } from '../src/runtime/runtime-contract.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

const parse = (raw: string): RawAnswer => {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), raw };
};

/** Opens a connection, writes `payload` (in parts, if several), and resolves with all it read once the server closes it. */
function untilClosed(port: number, payload: string | string[], localAddress?: string): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (raw += d));
    socket.on('error', () => {}); // a reset after the answer is the server closing
    socket.on('close', () => resolve(parse(raw)));
    socket.on('connect', () => {
      for (const part of Array.isArray(payload) ? payload : [payload]) socket.write(part);
    });
  });
}

/** A keep-alive connection that has had one request answered (so the server has surely counted it). */
function heldConnection(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.setEncoding('utf8');
    socket.once('error', reject);
    socket.once('data', (d: string) => (d.startsWith('HTTP/1.1 200') ? resolve(socket) : reject(new Error(d))));
    socket.on('connect', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
  });
}

const assertProblem = (answer: RawAnswer, status: number, code: string): void => {
  assert.equal(answer.status, status, answer.raw.slice(0, 400));
  assert.match(answer.headers['content-type'] ?? '', /application\/problem\+json/);
  const problem = JSON.parse(answer.body) as { status: number; code: string; detail: string };
  assert.deepEqual([problem.status, problem.code], [status, code]);
  assert.ok(problem.detail.length > 0);
};

describe('request timeouts', () => {
  let s: ListeningServer;
  let port: number;
  let jobPort: number;
  let key: string;
  let endpointId: string;

  before(async () => {
    const jobsPort = await freePort();
    // The long-poll holds (1.5 s) are well past the request timeout (0.4 s).
    s = await startListeningServer({
      server: { requestTimeoutMs: 400, headersTimeoutMs: 300, jobPort: jobsPort },
      jobs: { takeWaitMs: 1500 },
    });
    port = Number(new URL(s.server.url).port);
    jobPort = Number(new URL(s.server.jobUrl!).port);
    const { services } = s.server;
    const account = await services.accounts.createAccount('slow');
    key = (await services.accounts.createKey(account.id, { scope: 'write' })).key;
    const template = await services.templates.create(account.id, {
      name: 't',
      imageName: 'worker:dev',
      isServerless: true,
    });
    endpointId = (
      await services.endpoints.create(account.id, {
        name: 'e',
        templateId: template.id,
        gpuIds: 'ADA_24',
        workersMax: 0,
      })
    ).id;
  });
  after(() => s?.close());

  test('a client that sends half a body is answered 408 REQUEST_TIMEOUT and disconnected', async () => {
    const answer = await untilClosed(port, [
      `POST /v2/templates HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
      '{"name":"sl',
    ]);
    assertProblem(answer, 408, 'REQUEST_TIMEOUT');
    assert.equal(answer.headers.connection, 'close');
  });

  test('a client that never finishes its headers is answered 408 and disconnected', async () => {
    assertProblem(await untilClosed(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '), 408, 'REQUEST_TIMEOUT');
  });

  test('the job listener cuts a slow body the same way', async () => {
    const answer = await untilClosed(jobPort, [
      `POST /v2/${endpointId}/run HTTP/1.1\r\nHost: x\r\nAuthorization: ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`,
      '{"input":{',
    ]);
    assertProblem(answer, 408, 'REQUEST_TIMEOUT');
  });

  test('a job-take long-poll and a runsync held longer than the request timeout still complete', async () => {
    const take = await fetch(`${s.server.jobUrl}/v2/${endpointId}/job-take/w1`, { headers: { authorization: key } });
    assert.equal(take.status, 204);
    const runsync = await fetch(`${s.server.url}/v2/${endpointId}/runsync?wait=1000`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { x: 1 } }),
    });
    assert.equal(runsync.status, 200);
    assert.equal(((await runsync.json()) as { status: string }).status, 'IN_QUEUE');
  });
});

describe('connections per client', () => {
  let s: ListeningServer;
  let port: number;

  before(async () => {
    s = await startListeningServer({ server: { maxConnectionsPerClient: 3 } });
    port = Number(new URL(s.server.url).port);
  });
  after(() => s?.close());

  test('a connection past the per-client cap is refused 429 TOO_MANY_CONNECTIONS while other clients still get answers', async () => {
    const held = await Promise.all([heldConnection(port), heldConnection(port), heldConnection(port)]);
    const refused = await untilClosed(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assertProblem(refused, 429, 'TOO_MANY_CONNECTIONS');
    // another client address (the whole of 127.0.0.0/8 is loopback)
    const other = await untilClosed(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', '127.0.0.2');
    assert.equal(other.status, 200, other.raw);
    // the held connections still work
    const again = await new Promise<string>((resolve) => {
      held[0].once('data', (d: string) => resolve(d));
      held[0].write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    assert.match(again, /^HTTP\/1\.1 200/);
    // once one closes, the client may connect again (the server sees the close a moment later)
    await new Promise<void>((resolve) => {
      held[1].once('close', () => resolve());
      held[1].destroy();
    });
    let answer = refused;
    for (let i = 0; i < 50 && answer.status === 429; i++)
      answer = await untilClosed(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(answer.status, 200, answer.raw);
    for (const socket of held) socket.destroy();
  });
});

describe("errors of Node's HTTP parser", () => {
  let s: ListeningServer;
  let port: number;
  let key: string;

  before(async () => {
    s = await startListeningServer();
    port = Number(new URL(s.server.url).port);
    const account = await s.server.services.accounts.createAccount('parser');
    key = (await s.server.services.accounts.createKey(account.id, { scope: 'write' })).key;
  });
  after(() => s?.close());

  test('headers past the size limit answer 431 HEADERS_TOO_LARGE as problem+json', async () => {
    assertProblem(
      await untilClosed(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      431,
      'HEADERS_TOO_LARGE',
    );
  });

  test('a malformed request line answers 400 BAD_REQUEST as problem+json', async () => {
    const answer = await untilClosed(port, 'GET /healthz NOT-HTTP\r\n\r\n');
    assertProblem(answer, 400, 'BAD_REQUEST');
    assert.match(JSON.parse(answer.body).detail, /request line/);
  });

  test('bad chunked encoding answers 400 BAD_REQUEST as problem+json', async () => {
    const answer = await untilClosed(
      port,
      `POST /v2/templates HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    );
    assertProblem(answer, 400, 'BAD_REQUEST');
    assert.match(JSON.parse(answer.body).detail, /framed|HPE_/);
  });
});

describe('request ids', () => {
  test("a client's x-request-id is kept only when short and of a safe alphabet; otherwise a fresh id replaces it", async () => {
    const t = await createTestApp();
    try {
      const idOf = async (sent: string): Promise<string> =>
        String(
          (await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': sent } })).headers[
            'x-request-id'
          ],
        );
      for (const safe of ['trace-1', 'a.b_c:d-9', 'x'.repeat(128)]) assert.equal(await idOf(safe), safe);
      for (const unsafe of ['line\n{"level":60,"msg":"forged"}', 'has space', '"quoted"', 'x'.repeat(129), 'é', '']) {
        const id = await idOf(unsafe);
        assert.notEqual(id, unsafe);
        assert.match(id, /^[0-9a-f-]{36}$/);
      }
    } finally {
      await t.close();
    }
  });
});
