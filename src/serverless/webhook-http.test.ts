/**
 * The webhook HTTP client against a real receiver on 127.0.0.1. Refused addresses are never
 * connected to: the resolver seam answers them, and the refusal comes before any socket opens.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { startReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { FakeClock } from '../domain/clock.js';
import { WebhookAddressPolicy, WebhookAddressRefused } from './webhook-address-policy.js';
import { createWebhookFetch, type ResolveLike } from './webhook-http.js';

const post = (body = '{"ok":true}') => ({
  method: 'POST' as const,
  headers: { 'content-type': 'application/json' },
  body,
  redirect: 'manual' as const,
  signal: AbortSignal.timeout(60_000),
});
const policy = (mode: 'allow' | 'deny') =>
  new WebhookAddressPolicy({ mode, countAccounts: async () => 2, clock: new FakeClock(0) });
/** A resolver answering fixed addresses, recording the names it was asked. */
const resolver = (answers: Record<string, string[]>) => {
  const asked: string[] = [];
  const resolve: ResolveLike = async (name) => {
    asked.push(name);
    const found = answers[name];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return found.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, asked };
};

describe('createWebhookFetch', () => {
  let receiver: WebhookReceiver;
  let port: string;
  beforeEach(async () => {
    receiver = await startReceiver();
    port = new URL(receiver.url).port;
  });
  afterEach(() => receiver.close());

  test('a host name resolving to a private address is refused before any connection is made', async () => {
    const { resolve, asked } = resolver({ 'hooks.internal': ['10.0.0.5'] });
    const fetch = createWebhookFetch({ policy: policy('deny'), resolve });
    await assert.rejects(
      fetch(`http://hooks.internal:${port}/x`, post()),
      (err: Error) =>
        err instanceof WebhookAddressRefused && /resolves to an address that is private/.test(err.message),
    );
    assert.deepEqual(asked, ['hooks.internal']);
  });

  test('a host name with one public and one loopback address is refused', async () => {
    const { resolve } = resolver({ 'mixed.example': ['93.184.216.34', '127.0.0.1'] });
    const fetch = createWebhookFetch({ policy: policy('deny'), resolve });
    await assert.rejects(fetch(`http://mixed.example:${port}/`, post()), WebhookAddressRefused);
    assert.equal(receiver.calls.length, 0);
  });

  test('IP literals in every spelling are refused without resolving or connecting', async () => {
    const { resolve, asked } = resolver({});
    const fetch = createWebhookFetch({ policy: policy('deny'), resolve });
    for (const host of [
      '127.0.0.1',
      '2130706433',
      '0x7f.1',
      '127.1',
      '0177.0.0.01',
      '[::ffff:127.0.0.1]',
      '[::1]',
      '10.0.0.5',
      '169.254.169.254',
      '[64:ff9b::a00:5]',
      '[2002:7f00:1::1]',
      '0',
    ])
      await assert.rejects(fetch(`http://${host}:${port}/hook`, post()), WebhookAddressRefused, host);
    assert.deepEqual(asked, []);
    assert.equal(receiver.calls.length, 0);
  });

  test('the connection goes to the address the policy approved: the name is resolved once, by the socket', async () => {
    let calls = 0;
    const seen: string[][] = [];
    // A second resolution would fail the call: the check and the connect share one answer.
    const resolve: ResolveLike = async () => {
      if (calls++ > 0) throw new Error('resolved twice');
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const approving = {
      refusal: async (_host: string, addresses: readonly string[]) => (seen.push([...addresses]), null),
    };
    const fetch = createWebhookFetch({ policy: approving, resolve });
    const res = await fetch(`http://receiver.test:${port}/hook?token=t`, post('{"n":1}'));
    assert.equal(res.status, 200);
    assert.equal(calls, 1);
    assert.deepEqual(seen, [['127.0.0.1']]);
    assert.equal(receiver.calls.length, 1);
    assert.equal(receiver.calls[0]!.path, '/hook?token=t');
    assert.deepEqual(receiver.calls[0]!.body, { n: 1 });
    assert.equal(receiver.calls[0]!.headers.host, `receiver.test:${port}`);
  });

  test('allowed numeric host forms reach the address they name', async () => {
    const fetch = createWebhookFetch({ policy: policy('allow') });
    for (const host of ['2130706433', '0x7f.1', '127.1'])
      assert.equal((await fetch(`http://${host}:${port}/n`, post())).status, 200, host);
    assert.equal(receiver.calls.length, 3);
  });

  test('a redirect is answered as it is, never followed', async () => {
    receiver.script = [302];
    const fetch = createWebhookFetch({ policy: policy('allow') });
    assert.equal((await fetch(`${receiver.url}/hook`, post())).status, 302);
    assert.equal(receiver.calls.length, 1);
  });

  test('a URL that is not http(s) is refused', async () => {
    const fetch = createWebhookFetch({ policy: policy('allow') });
    await assert.rejects(fetch('file:///etc/passwd', post()), WebhookAddressRefused);
  });
});
