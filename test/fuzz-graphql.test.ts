// Hostile GraphQL documents from a tenant holding a write key of its own account: documents built
// to make the parser, the validator or the executor do unbounded work are refused, cheaply and
// before any resolver runs; root fields count against the key's rate limits one by one; secrets
// sent in a request never come back in an error, and nothing else in the message is mangled.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { clientDocuments } from './fixtures/client-graphql-documents.js';
import { createTestApp, json, type TestApp } from './support/harness.js';

type Answer = { data?: unknown; errors?: Array<{ message: string; extensions: { code: string } }> };
const times = (n: number, f: (i: number) => string): string => Array.from({ length: n }, (_, i) => f(i)).join(' ');

describe('GraphQL document bounds', () => {
  let t: TestApp;
  let tenant: { accountId: string; key: string; readKey: string };
  /** Every call of the resolver behind `myself { endpoints }`: an executed attack would call it. */
  let listed = 0;
  before(async () => {
    t = await createTestApp();
    tenant = await t.newAccount('mallory');
    const list = t.services.endpoints.list.bind(t.services.endpoints);
    t.services.endpoints.list = (accountId) => {
      listed += 1;
      return list(accountId);
    };
  });
  after(() => t.close());

  const post = (query: string, key = tenant.key): Promise<LightMyRequestResponse> =>
    t.request(key, 'POST', '/graphql', { query });

  const attacks: Array<[string, string, RegExp]> = [
    [
      'twenty thousand aliases (260 KB)',
      `{ ${times(20_000, (i) => `a${i}:__typename`)} }`,
      /bytes; this server accepts documents of at most 65536 bytes/,
    ],
    [
      'a 300 KB document of aliased list fields',
      `{ ${times(11_000, (i) => `a${i}:myself{endpoints{id}}`)} }`,
      /is \d{6} bytes/,
    ],
    [
      '1 500 aliased fields under the byte bound',
      `{ myself { ${times(1_500, (i) => `a${i}:endpoints{id}`)} } }`,
      /uses 1500 aliases, fragments expanded; at most 50/,
    ],
    [
      'selections nested 2 000 deep',
      `{ myself ${'{ endpoints '.repeat(2_000)}{ id }${' }'.repeat(2_000)} }`,
      /nests braces, brackets and parentheses more than 30 levels deep/,
    ],
    [
      'selections nested 16 deep',
      `{ myself { endpoints ${'{ template '.repeat(14)}{ id }${' }'.repeat(14)} } }`,
      /nests fields 17 deep; at most 15/,
    ],
    [
      'a fragment bomb (2^20 expansions)',
      `{ myself { ...F20 } } fragment F0 on User { endpoints { id } } ${times(20, (i) => `fragment F${i + 1} on User { ...F${i} ...F${i} }`)}`,
      /selects 2097153 fields, fragments expanded/,
    ],
    [
      'a fragment cycle',
      'fragment A on User { endpoints { id } ...B } fragment B on User { ...A } { myself { ...A } }',
      /A → B → A/,
    ],
    [
      'a thousand directives',
      `{ myself ${'@skip(if: false) '.repeat(1_000)}{ endpoints { id } } }`,
      /uses 1000 directives; at most 50/,
    ],
    [
      'two hundred variables',
      `query Q(${times(200, (i) => `$v${i}: Int`)}) { myself { endpoints { id } } }`,
      /defines 200 variables; at most 50/,
    ],
    [
      'eleven operations',
      times(11, (i) => `query Q${i} { myself { endpoints { id } } }`),
      /holds 11 operations; at most 10/,
    ],
    [
      'one field selected 300 times',
      `{ myself { ${times(300, () => 'endpoints { id }')} } }`,
      /the same response name at the same place\) 300 times/,
    ],
    [
      'twenty-one root fields',
      `{ ${times(21, (i) => `a${i}: myself { endpoints { id } }`)} }`,
      /has 21 root fields, fragments expanded; at most 20/,
    ],
    [
      'nested lists costing more than 5 000',
      `{ ${times(10, (i) => `a${i}: myself { endpoints { env { key value } pods { id desiredStatus } networkVolumeIds { networkVolumeId dataCenterId } } }`)} }`,
      /computed cost of 6320 .*at most 5000/,
    ],
  ];
  for (const [name, query, detail] of attacks) {
    test(`${name}: refused with QUERY_TOO_COMPLEX before any resolver runs`, async () => {
      const before = listed;
      const res = await post(query);
      assert.equal(res.statusCode, 200, res.body.slice(0, 300));
      const answer = json<Answer>(res);
      assert.equal(answer.data, undefined);
      assert.equal(answer.errors?.length, 1, res.body.slice(0, 300));
      assert.equal(answer.errors[0]!.extensions.code, 'QUERY_TOO_COMPLEX');
      assert.match(answer.errors[0]!.message, detail);
      assert.equal(listed, before, 'a refused document never reaches a resolver');
    });
  }

  test('/healthz keeps answering while every attack document is sent at once', async () => {
    const before = listed;
    const sent = [
      ...attacks.map(([, query]) => post(query)),
      ...Array.from({ length: attacks.length }, () => t.request(null, 'GET', '/healthz')),
    ];
    const answers = await Promise.all(sent);
    for (const res of answers.slice(attacks.length)) assert.equal(res.statusCode, 200);
    for (const res of answers.slice(0, attacks.length))
      assert.equal(json<Answer>(res).errors?.[0]?.extensions.code, 'QUERY_TOO_COMPLEX');
    assert.equal(listed, before);
    assert.equal((await post('{ myself { endpoints { id } } }')).statusCode, 200);
    assert.equal(listed, before + 1, 'a reasonable document still runs');
  });

  test('every document runpod-python and runpodctl send passes the bounds', async () => {
    for (const [name, query] of Object.entries(clientDocuments)) {
      // The read key: mutations stop at the scope check, which comes after the bounds.
      const answer = json<Answer>(await post(query, tenant.readKey));
      for (const e of answer.errors ?? [])
        assert.notEqual(e.extensions.code, 'QUERY_TOO_COMPLEX', `${name}: ${e.message}`);
    }
  });

  test('a batch (a JSON array of operations) is refused as a whole and runs nothing', async () => {
    const before = listed;
    const res = await t.request(
      tenant.key,
      'POST',
      '/graphql',
      Array.from({ length: 100 }, () => ({ query: '{ myself { endpoints { id } } }' })),
    );
    assert.equal(res.statusCode, 200);
    assert.match(
      json<Answer>(res).errors![0]!.message,
      /Batched requests .* are not supported; send one \{"query": …\} per request/,
    );
    assert.equal(listed, before);
  });

  test('errors never suggest the names of fields, arguments, types or input fields', async () => {
    const probes = [
      post('{ myself { idd } }'),
      post('{ endpoint(idd: "x") { id } }'),
      post('query Q($f: GpuTypeFiltr) { gpuTypes(input: $f) { id } }'),
      post('mutation { podFindAndDeployOnDemand(input: {cloudType: AL}) { id } }'),
      t.request(tenant.key, 'POST', '/graphql', {
        query: 'mutation M($input: SaveRegistryAuthInput) { saveRegistryAuth(input: $input) { id } }',
        variables: { input: { nam: 'x' } },
      }),
    ];
    for (const res of await Promise.all(probes)) {
      const answer = json<Answer>(res);
      assert.ok(answer.errors && answer.errors.length > 0, res.body);
      for (const e of answer.errors) assert.doesNotMatch(e.message, /Did you mean/, e.message);
    }
  });
});

describe('GraphQL root fields against the rate limits', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({
      file: { rateLimits: { minute: 100, hour: 1000, day: 10_000 }, graphql: { maxRootFields: 200, maxAliases: 200 } },
    });
  });
  after(() => t.close());
  const minuteLeft = (res: LightMyRequestResponse): number =>
    Number(/"minute";r=(\d+)/.exec(String(res.headers['ratelimit']))?.[1]);

  test('each root field of the operation run counts as one request against the key’s windows', async () => {
    const { key } = await t.newAccount();
    const res = await t.request(key, 'POST', '/graphql', { query: `{ ${times(20, (i) => `a${i}: myself { id }`)} }` });
    assert.equal(res.statusCode, 200);
    assert.equal(minuteLeft(res), 80);
    assert.equal(minuteLeft(await t.request(key, 'GET', '/v2/account/ssh-keys')), 79);
    // Only the operation that runs is charged, not the others in the document.
    const two = await t.request(key, 'POST', '/graphql', {
      query: `query A { ${times(30, (i) => `a${i}: myself { id }`)} } query B { myself { id } }`,
      operationName: 'B',
    });
    assert.equal(minuteLeft(two), 78);
  });

  test('200 aliased saveEndpoint mutations cost 200: refused whole with 429, Retry-After and RateLimit, and none runs', async () => {
    const { key, accountId } = await t.newAccount();
    const template = (await t.services.templates.create(accountId, { name: 'w', imageName: 'w:1', isServerless: true }))
      .id;
    const query = `mutation { ${times(200, (i) => `e${i}: saveEndpoint(input: {name: "e${i}", templateId: "${template}", gpuIds: "ADA_24"}) { id }`)} }`;
    const refused = await t.request(key, 'POST', '/graphql', { query });
    assert.equal(refused.statusCode, 429, refused.body.slice(0, 300));
    assert.match(String(refused.headers['content-type']), /application\/problem\+json/);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.match(String(refused.headers['ratelimit']), /^"minute";r=99;t=\d+/);
    assert.equal(json(refused).code, 'RATE_LIMITED');
    assert.match(
      json(refused).detail,
      /may make 100 requests per minute; retry in \d+ s\. This request counts as 200 requests \(one per GraphQL root field\) and 99 remain\./,
    );
    assert.deepEqual(await t.services.endpoints.list(accountId), []);
  });

  test('a refused document charges only its own request, so what remains can still be used', async () => {
    const { key, accountId } = await t.newAccount();
    const aliases = (n: number) =>
      `mutation { ${times(n, (i) => `r${i}: saveRegistryAuth(input: {name: "r${i}", username: "u", password: "hunter2-s3cret"}) { id }`)} }`;
    assert.equal(minuteLeft(await t.request(key, 'POST', '/graphql', { query: aliases(90) })), 10);
    assert.equal((await t.request(key, 'POST', '/graphql', { query: aliases(11) })).statusCode, 429);
    assert.equal((await t.services.registries.list(accountId)).length, 90);
    const last = await t.request(key, 'POST', '/graphql', { query: aliases(9) });
    assert.equal(last.statusCode, 200, last.body.slice(0, 300));
    assert.equal(minuteLeft(last), 0);
    assert.equal((await t.services.registries.list(accountId)).length, 99);
  });

  test('rate-limit-exempt keys are not charged per root field', async () => {
    const account = await t.services.accounts.createAccount('exempt-gql');
    const { key } = await t.services.accounts.createKey(account.id, { scope: 'read', rateLimitExempt: true });
    for (let i = 0; i < 2; i++) {
      const res = await t.request(key, 'POST', '/graphql', {
        query: `{ ${times(200, (j) => `a${j}: myself { id }`)} }`,
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['ratelimit'], undefined);
    }
  });
});

describe('GraphQL error redaction', () => {
  let t: TestApp;
  let tenant: { key: string };
  before(async () => {
    t = await createTestApp();
    tenant = await t.newAccount();
  });
  after(() => t.close());
  const messages = async (query: string, variables?: Record<string, unknown>): Promise<string> => {
    const res = await t.request(tenant.key, 'POST', '/graphql', { query, ...(variables ? { variables } : {}) });
    const answer = json<Answer>(res);
    assert.ok(answer.errors && answer.errors.length > 0, res.body);
    return answer.errors.map((e) => e.message).join('\n');
  };

  test('a one-letter password leaves the rest of an error message readable', async () => {
    const message = await messages(
      'mutation { saveRegistryAuth(input: {name: "n", username: "u", password: "a", colour: "red"}) { id } }',
    );
    assert.match(message, /Field "colour" is not defined by type "SaveRegistryAuthInput"/);
    assert.doesNotMatch(message, /\[redacted\]/);
  });

  test('a short password echoed by a type error is still hidden, inline or in variables', async () => {
    const inline = await messages(
      'mutation { saveRegistryAuth(input: {name: "n", username: "u", password: ["pw"]}) { id } }',
    );
    assert.match(inline, /String cannot represent a non string value: \["\[redacted\]"\]/);
    const variables = await messages(
      'mutation M($input: SaveRegistryAuthInput) { saveRegistryAuth(input: $input) { id } }',
      { input: { name: 'n', username: 'u', password: ['pw'] } },
    );
    assert.doesNotMatch(variables, /"pw"/);
    assert.match(variables, /\[redacted\]/);
    const renamed = await messages(
      'mutation M($p: String, $x: Int) { saveRegistryAuth(input: {name: "n", username: "u", password: $p}) { id } }',
      { p: ['pw'] },
    );
    assert.doesNotMatch(renamed, /"pw"/);
  });

  test('a syntax error does not quote the string it stopped at: it may be a password', async () => {
    const message = await messages(
      'mutation { saveRegistryAuth(input: {name: "n", username: "u", password "hunter2-syntax"}) { id } }',
    );
    assert.equal(message, 'Syntax Error: Expected ":", found String.');
    assert.equal(await messages('{ myself { id } "stray" }'), 'Syntax Error: Expected Name, found String.');
  });
});
