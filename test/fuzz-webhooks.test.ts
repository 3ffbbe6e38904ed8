/**
 * Hostile `webhook` values on `/run`: anything but a plain http(s) URL with a host is refused with
 * 400 INVALID_PARAMETER naming `webhook` (control characters, whitespace, credentials, other
 * schemes, no host, over-long), and a private IP literal in any numeric spelling is refused with
 * 400 WEBHOOK_NOT_ALLOWED on a deployment with several accounts. Nothing is queued for either.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { MAX_WEBHOOK_URL_LENGTH, webhookUrlViolation } from '../src/domain/webhook-url.js';

const runs = Number(process.env.FUZZ_RUNS ?? 60);

let t: TestApp;
let key: string;
let ep: string;
before(async () => {
  t = await createTestApp();
  const acct = await t.newAccount('webhook-fuzzer');
  await t.newAccount('someone-else');
  key = acct.key;
  const template = await t.services.templates.create(acct.accountId, {
    name: 'fuzz-tpl',
    imageName: 'worker:dev',
    isServerless: true,
  });
  ep = (await t.services.endpoints.create(acct.accountId, { name: 'fuzz', templateId: template.id, gpuIds: 'ADA_24' }))
    .id;
});
after(() => t.close());

const run = (webhook: unknown) => t.request(key, 'POST', `/v2/${ep}/run`, { input: { n: 1 }, webhook });
const queued = async () => (await t.services.jobs.client.queueStats(ep)).inQueue;

/** Asserts a 400 problem with `code` whose `errors` name the webhook. */
function assertRefused(
  res: Awaited<ReturnType<typeof run>>,
  code: 'INVALID_PARAMETER' | 'WEBHOOK_NOT_ALLOWED',
  label: string,
): void {
  assert.equal(res.statusCode, 400, `${label}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  const problem = json(res);
  assert.equal(problem.code, code, label);
  assert.ok(
    (problem.errors as string[]).some((e) => e.startsWith('webhook')),
    `${label}: ${res.body}`,
  );
}

test('a webhook with a control character, whitespace, credentials, another scheme or no host is refused with 400 INVALID_PARAMETER', async () => {
  const before = await queued();
  const hostile = [
    'http://\u0000',
    'http://\u0000/',
    'http://example.com\u0000.evil/',
    'http://example.com/\r\nX-Injected: 1',
    'http://exa mple.com/',
    'http://example.com/a b',
    ' http://example.com/',
    'http://example.com/\t',
    'http://example.com/\u2028',
    'http://example.com/\u200b',
    'http://user:pass@example.com/',
    'http://user@example.com/',
    'http://@127.0.0.1/',
    'ftp://example.com/',
    'file:///etc/passwd',
    'gopher://127.0.0.1:6379/_FLUSHALL',
    'javascript:alert(1)',
    'http:example.com',
    'http:/example.com',
    'http:\\\\example.com',
    '//example.com/',
    'http://',
    'https://:443/',
    'http://[::1',
    `https://example.com/${'a'.repeat(MAX_WEBHOOK_URL_LENGTH)}`,
    '',
    42,
    { url: 'http://example.com' },
    ['http://example.com'],
  ];
  for (const webhook of hostile)
    assertRefused(await run(webhook), 'INVALID_PARAMETER', JSON.stringify(webhook).slice(0, 80));
  assert.equal(await queued(), before, 'nothing was queued');
});

test('a private IP literal in any numeric spelling is refused with 400 WEBHOOK_NOT_ALLOWED on a multi-account deployment', async () => {
  const before = await queued();
  for (const host of [
    '127.0.0.1',
    '2130706433',
    '0x7f.1',
    '0x7f000001',
    '127.1',
    '0177.0.0.1',
    '017700000001',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[::1]',
    '[0:0:0:0:0:0:0:1]',
    '0',
    '0.0.0.0',
    '[::]',
    '10.0.0.5',
    '167772165',
    '169.254.169.254',
    '[fe80::1]',
    '[fd00::1]',
    '[64:ff9b::a00:5]',
    '[2002:a00:5::1]',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
  ])
    assertRefused(await run(`http://${host}:8080/hook`), 'WEBHOOK_NOT_ALLOWED', host);
  assert.equal(await queued(), before, 'nothing was queued');
});

test('a valid webhook URL with one control or space character inserted anywhere is refused', async () => {
  const base = 'https://hooks.example.com:8443/path/to/hook?token=abc&x=1';
  const bad = fc.constantFrom(
    '\u0000',
    '\u0001',
    '\u0008',
    '\t',
    '\n',
    '\r',
    '\u000b',
    '\u001f',
    ' ',
    '\u007f',
    '\u0085',
    '\u00a0',
    '\u2028',
    '\u3000',
    '\ufeff',
  );
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: base.length }), bad, async (at, c) => {
      assertRefused(await run(base.slice(0, at) + c + base.slice(at)), 'INVALID_PARAMETER', JSON.stringify({ at, c }));
    }),
    { numRuns: runs },
  );
});

test('any string as a webhook answers 200 or a 400 problem, never a server error, and what is accepted is a valid webhook', async () => {
  const prefix = fc.constantFrom(
    'http://',
    'https://',
    'HTTP://',
    'http:',
    'http:/',
    '',
    'http://127.0.0.1',
    'https://example.com',
  );
  const tail = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
  );
  await fc.assert(
    fc.asyncProperty(prefix, tail, async (p, rest) => {
      const webhook = p + rest;
      const res = await run(webhook);
      assert.ok(
        res.statusCode === 200 || res.statusCode === 400,
        `${JSON.stringify(webhook)} answered ${res.statusCode}: ${res.body}`,
      );
      if (res.statusCode === 200) assert.equal(webhookUrlViolation(webhook), null, JSON.stringify(webhook));
    }),
    { numRuns: runs },
  );
});

test('the server still takes a job with a public webhook after the fuzzing', async () => {
  const res = await run('https://hooks.example.com/done?token=abc');
  assert.equal(res.statusCode, 200, res.body);
});
