import { test } from 'node:test';
import assert from 'node:assert/strict';
import { literalAddress, MAX_WEBHOOK_URL_LENGTH, webhookUrlViolation } from './webhook-url.js';

test('http and https URLs with a host are valid webhooks', () => {
  for (const url of [
    'http://example.com',
    'https://example.com/hook?token=a%20b#frag',
    'HTTPS://Example.COM:8443/x',
    'http://127.0.0.1:9/hook',
    'http://[::1]:8080/',
    'http://bücher.example/',
  ])
    assert.equal(webhookUrlViolation(url), null, url);
});

test('a webhook with a control character, a space or an invisible separator is refused', () => {
  for (const url of [
    'http://\u0000',
    'http://a\u0000b/',
    'http://example.com/\u0007',
    'http://example.com/a b',
    ' http://example.com',
    'http://example.com\t',
    'http://example.com\n/x',
    'http://example.com/\u007f',
    'http://example.com/\u0085',
    'http://example.com/\u00a0',
    'http://example.com/\u2028',
    'http://exa\u200bmple.com/',
    'http://example.com/\ufeff',
  ])
    assert.equal(
      webhookUrlViolation(url),
      'webhook must not contain whitespace or control characters',
      JSON.stringify(url),
    );
});

test('a webhook that is not an absolute http(s) URL is refused', () => {
  for (const url of [
    'ftp://example.com',
    'file:///etc/passwd',
    'gopher://x',
    'javascript:alert(1)',
    'data:text/plain,x',
    'http:example.com',
    'http:/example.com',
    'http:\\\\example.com',
    '//example.com',
    'example.com',
    'http://',
    'https://:443/',
    'http://[::1',
    'http://exa mple.com'.replace(' ', '%'),
    '',
  ])
    assert.notEqual(webhookUrlViolation(url), null, url);
  for (const value of [1, null, {}, ['http://x'], true])
    assert.equal(webhookUrlViolation(value), 'webhook must be an http(s) URL');
});

test('a webhook carrying credentials is refused', () => {
  for (const url of [
    'http://user:pass@example.com/',
    'http://user@example.com/',
    'https://:secret@example.com',
    'http://@example.com/',
  ])
    assert.equal(webhookUrlViolation(url), 'webhook must not carry credentials (user:password@)', url);
  assert.equal(webhookUrlViolation('http://example.com/path@x?q=a@b'), null, 'an @ after the host is part of the path');
});

test('a webhook longer than the maximum is refused, one at the maximum is valid', () => {
  const base = 'https://example.com/';
  assert.equal(webhookUrlViolation(base + 'a'.repeat(MAX_WEBHOOK_URL_LENGTH - base.length)), null);
  assert.equal(
    webhookUrlViolation(base + 'a'.repeat(MAX_WEBHOOK_URL_LENGTH - base.length + 1)),
    `webhook must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`,
  );
});

test('numeric host forms are read as the address they name', () => {
  const cases: Array<[string, string | null]> = [
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://0/', '0.0.0.0'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['http://[::1]:80/', '::1'],
    ['http://example.com/', null],
    ['http://10.0.0.5.nip.io/', null],
  ];
  for (const [url, address] of cases) assert.equal(literalAddress(new URL(url)), address, url);
});
