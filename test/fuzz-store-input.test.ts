// Hostile values that only a store refuses: NUL characters in text, `%00` in ids and query
// strings, integers past 32 bits. PostgreSQL answered each with a 500 (SQLite stored them); now
// both stores answer a 4xx naming the field before the value reaches them, and the free JSON of a
// job (its input, a worker's output) still carries a NUL intact. Runs on every dialect.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, dialects, json, type TestApp } from './support/harness.js';

for (const dialect of dialects()) {
  describe(`on ${dialect.name}`, { skip: dialect.skip }, () => {
    let t: TestApp;
    let key: string;
    let accountId: string;
    let ep: string;

    before(async () => {
      t = await createTestApp({ dialect: dialect.name, file: { jobs: { takeWaitMs: 50 } } });
      ({ key, accountId } = await t.newAccount('hostile'));
      const template = await t.services.templates.create(accountId, {
        name: 'tpl',
        imageName: 'worker:dev',
        isServerless: true,
      });
      ep = (await t.services.endpoints.create(accountId, { name: 'ep', templateId: template.id, gpuIds: 'ADA_24' })).id;
    });
    after(() => t?.close());

    const problem = (res: LightMyRequestResponse, status: number, code: string) => {
      assert.equal(res.statusCode, status, res.body);
      assert.match(String(res.headers['content-type']), /application\/problem\+json/);
      const p = json<{ code: string; detail: string; errors?: string[] }>(res);
      assert.equal(p.code, code, res.body);
      return p;
    };

    test('a REST body string holding a NUL answers 422 naming the field', async () => {
      const named = problem(
        await t.request(key, 'POST', '/v2/templates', { name: 'a\u0000b', imageName: 'ubuntu:22.04' }),
        422,
        'VALIDATION_FAILED',
      );
      assert.deepEqual(named.errors, ['name: must not contain a NUL character (\\u0000)']);
      const envValue = problem(
        await t.request(key, 'POST', '/v2/templates', { name: 'n', imageName: 'i', env: { A: 'x\u0000' } }),
        422,
        'VALIDATION_FAILED',
      );
      assert.deepEqual(envValue.errors, ['env.A: must not contain a NUL character (\\u0000)']);
      const envKey = problem(
        await t.request(key, 'POST', '/v2/pods', {
          name: 'n',
          image: 'i',
          gpu: { id: 'NVIDIA GeForce RTX 4090' },
          env: { 'K\u0000': 'v' },
        }),
        422,
        'VALIDATION_FAILED',
      );
      assert.deepEqual(envKey.errors, ['env.K\\u0000: must not contain a NUL character (\\u0000)']);
      problem(
        await t.request(key, 'POST', '/v2/registries', { name: 'r', username: 'u', password: 'p\u0000' }),
        422,
        'VALIDATION_FAILED',
      );
      problem(
        await t.request(key, 'POST', '/v2/serverless', {
          name: '\u0000',
          type: 'QUEUE',
          templateId: 'x',
          gpu: { pools: ['ADA_24'] },
          scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        }),
        422,
        'VALIDATION_FAILED',
      );
    });

    test('an escaped backslash before u0000 is text, not a NUL, and is stored as sent', async () => {
      const res = await t.request(key, 'POST', '/v2/templates', { name: 'a\\u0000b', imageName: 'i' });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(json(res).name, 'a\\u0000b');
    });

    test('disk and volume sizes past the stated 10,000 GB bound answer 422, not a 32-bit overflow', async () => {
      for (const [url, body] of [
        ['/v2/templates', { name: 'n', image: 'i', disk: 2 ** 31 }],
        ['/v2/templates', { name: 'n', image: 'i', mounts: { persistent: { size: 10_001, path: '/w' } } }],
        ['/v2/pods', { name: 'n', image: 'i', gpu: { id: 'NVIDIA GeForce RTX 4090' }, disk: 2 ** 31 }],
        [
          '/v2/pods',
          {
            name: 'n',
            image: 'i',
            gpu: { id: 'NVIDIA GeForce RTX 4090' },
            mounts: { persistent: { size: 2 ** 53, path: '/w' } },
          },
        ],
        ['/v2/network-volumes', { name: 'n', size: 2 ** 31, dataCenter: 'US-TX-3' }],
      ] as const) {
        const p = problem(await t.request(key, 'POST', url, body), 422, 'VALIDATION_FAILED');
        assert.match(p.detail, /must be <= /, `${url} ${JSON.stringify(body)}`);
      }
      const tpl = await t.request(key, 'POST', '/v2/templates', {
        name: 'big',
        image: 'i',
        disk: 10_000,
      });
      assert.equal(tpl.statusCode, 201, tpl.body);
      const patched = await t.request(key, 'PATCH', `/v2/templates/${json(tpl).id}`, { disk: 2 ** 31 });
      problem(patched, 422, 'VALIDATION_FAILED');
    });

    test('a %00 in a path id or a query string answers 400 INVALID_PARAMETER on every route', async () => {
      for (const [method, url] of [
        ['GET', '/v2/%00/status/%00'],
        ['GET', `/v2/${ep}/status/a%00b`],
        ['POST', `/v2/${ep}/cancel/%00`],
        ['GET', `/v2/${ep}/stream/%00`],
        ['GET', `/v2/${ep}/job-take/w1?job_in_progress=%00`],
        ['POST', `/v2/${ep}/job-done/w1?id=%00`],
        ['GET', '/v2/pods?name=%00'],
        ['GET', '/v2/pods/%00'],
        ['GET', '/graphql?query=%7B%20myself%20%7B%20id%20%7D%20%7D&operationName=%00'],
      ] as const) {
        const p = problem(await t.request(key, method, url), 400, 'INVALID_PARAMETER');
        assert.match(p.detail, /NUL/, url);
      }
    });

    test('a GraphQL string argument or variable holding a NUL answers a VALIDATION_FAILED error naming it', async () => {
      const inline = await t.request(key, 'POST', '/graphql', {
        query: 'mutation { saveTemplate(input: { name: "a\\u0000", imageName: "i" }) { id } }',
      });
      assert.equal(inline.statusCode, 200);
      assert.deepEqual(
        json(inline).errors.map((e: { extensions: { code: string } }) => e.extensions.code),
        ['VALIDATION_FAILED'],
      );
      assert.match(json(inline).errors[0].message, /input\.name: must not contain a NUL/);
      const variables = await t.request(key, 'POST', '/graphql', {
        query: 'mutation M($input: SaveTemplateInput) { saveTemplate(input: $input) { id } }',
        variables: { input: { name: 'n', imageName: 'i', env: [{ key: 'A', value: '\u0000' }] } },
      });
      assert.equal(json(variables).errors[0].extensions.code, 'VALIDATION_FAILED');
      assert.match(json(variables).errors[0].message, /variables\.input\.env\.0\.value/);
      assert.ok((await t.services.templates.store.listOwned(accountId)).every((x) => !x.name.includes('\u0000')));
    });

    test("a job's input holding a NUL is queued and reaches the worker intact; a webhook holding one answers 400", async () => {
      const run = await t.request(key, 'POST', `/v2/${ep}/run`, { input: { text: 'a\u0000b' } });
      assert.equal(run.statusCode, 200, run.body);
      const take = await t.request(key, 'GET', `/v2/${ep}/job-take/w-nul`);
      assert.equal(take.statusCode, 200, take.body);
      assert.deepEqual(json(take).input, { text: 'a\u0000b' });
      const done = await t.request(key, 'POST', `/v2/${ep}/job-done/w-nul/${json(take).id}`, {
        output: { echo: '\u0000' },
      });
      assert.equal(done.statusCode, 200, done.body);
      const status = await t.request(key, 'GET', `/v2/${ep}/status/${json(run).id}`);
      assert.deepEqual([json(status).status, json(status).output], ['COMPLETED', { echo: '\u0000' }]);
      const hook = problem(
        await t.request(key, 'POST', `/v2/${ep}/run`, { input: {}, webhook: 'https://example.com/\u0000' }),
        400,
        'INVALID_PARAMETER',
      );
      assert.ok(hook.errors?.includes('webhook must not contain a NUL character'), hook.detail);
    });

    test("a worker's error message holding a NUL fails the job with U+FFFD in its place", async () => {
      const run = await t.request(key, 'POST', `/v2/${ep}/run`, { input: {} });
      const take = await t.request(key, 'GET', `/v2/${ep}/job-take/w-err`);
      assert.equal(json(take).id, json(run).id);
      const done = await t.request(key, 'POST', `/v2/${ep}/job-done/w-err/${json(take).id}`, {
        error: 'bad\u0000byte',
      });
      assert.equal(done.statusCode, 200, done.body);
      const status = await t.request(key, 'GET', `/v2/${ep}/status/${json(run).id}`);
      assert.deepEqual([json(status).status, json(status).error], ['FAILED', 'bad\uFFFDbyte']);
    });

    test('s3Config fields of the wrong type or length answer 400 INVALID_PARAMETER naming each, never echoing the secret', async () => {
      const secret = 'TOP-SECRET-'.repeat(200);
      const res = await t.request(key, 'POST', `/v2/${ep}/run`, {
        input: {},
        s3Config: { accessId: 42, accessSecret: secret, bucketName: ['b'], endpointUrl: 'https://s3.example.com' },
      });
      const p = problem(res, 400, 'INVALID_PARAMETER');
      assert.deepEqual(p.errors, [
        's3Config.accessId must be a string',
        's3Config.accessSecret must be at most 1024 characters',
        's3Config.bucketName must be a string',
      ]);
      assert.ok(!res.body.includes('TOP-SECRET'));
      const ok = await t.request(key, 'POST', `/v2/${ep}/run`, {
        input: {},
        s3Config: { accessId: 'a', accessSecret: 's', bucketName: 'b', endpointUrl: 'https://s3.example.com' },
      });
      assert.equal(ok.statusCode, 200, ok.body);
    });
  });
}
