/**
 * The pod HTTP proxy behind a reverse proxy (`server.trustedProxies`, docs/deploy.md "HTTPS"): a
 * pod is told the client's address and scheme in `X-Forwarded-For` / `-Proto`. Only a trusted
 * proxy's forwarded headers are believed; from any other peer they are replaced with the
 * connection's own, so a tenant cannot pose to a pod (an application's own allow-list, its logs)
 * as another address. Real server, process runtime, a real pod (test/fixtures/proxy-upstream.mjs
 * echoing what it received); the trusted proxy is the loopback address 127.0.0.2, the untrusted
 * client 127.0.0.1 (a client socket bound to each).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startProxyFixture, type ProxiedPod, type ProxyFixture } from './support/proxy-fixture.js';

const TRUSTED = '127.0.0.2';

/** GET `url` from the local address `from` with `headers`; the headers the pod saw. */
function echoFrom(url: string, from: string, headers: Record<string, string>): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress: from, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${res.statusCode}: ${body}`));
        resolve((JSON.parse(body) as { headers: Record<string, string> }).headers);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the pod HTTP proxy behind a trusted reverse proxy', () => {
  let f: ProxyFixture;
  let pod: ProxiedPod;
  let url: string;

  before(async () => {
    f = await startProxyFixture({ server: { trustedProxies: [TRUSTED] } });
    pod = await f.proxiedPod(await f.tenant('forwarded-alice'));
    url = `${pod.httpProxy[0]!.url}echo`;
  });
  after(() => f?.close());

  test('a client that is not a trusted proxy cannot pose as another address or scheme: the pod sees its connection', async () => {
    const seen = await echoFrom(url, '127.0.0.1', {
      'x-forwarded-for': '203.0.113.66',
      'x-forwarded-proto': 'https',
    });
    assert.equal(seen['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen['x-forwarded-proto'], 'http');
  });

  test('through the trusted proxy the pod sees the client the proxy names, and its scheme', async () => {
    const seen = await echoFrom(url, TRUSTED, { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' });
    assert.equal(seen['x-forwarded-for'], '203.0.113.7');
    assert.equal(seen['x-forwarded-proto'], 'https');
  });

  test('a client writing its own X-Forwarded-For through the trusted proxy is the address the proxy saw, not the one it wrote', async () => {
    // the proxy appends the address it saw (198.51.100.4) to what the client wrote
    const seen = await echoFrom(url, TRUSTED, { 'x-forwarded-for': '10.0.0.1, 198.51.100.4' });
    assert.equal(seen['x-forwarded-for'], '198.51.100.4');
  });

  test('a forwarded scheme that is neither http nor https is not passed on', async () => {
    const seen = await echoFrom(url, TRUSTED, { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'gopher' });
    assert.equal(seen['x-forwarded-proto'], 'http');
  });
});
