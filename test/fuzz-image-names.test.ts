// Image names are tenant input: names of Object.prototype members must find no mapping in the
// config's `images` (they once resolved to prototype members and sent the pod to ERROR), and with
// runtime docker no reference may name a registry on the host or its network.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { loadConfig } from '../src/config.js';
import { assertImageRefused, dockerApp } from './support/docker-app.js';
import type { FakeRuntime } from './support/fake-runtime/fake-runtime.js';

const PROTOTYPE_NAMES = [
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
];

let t: TestApp;
let key: string;

before(async () => {
  t = await createTestApp({
    file: {
      rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 },
      images: { 'mapped:1': { command: ['true'] } },
    },
  });
  key = (await t.newAccount('names')).key;
});
after(() => t.close());

async function statusOf(
  id: string,
  wanted: string,
  timeoutMs = 20_000,
): Promise<{ status: string; statusReason: string | null }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pod = json(await t.request(key, 'GET', `/v2/pods/${id}`));
    if (pod.status === wanted || pod.status === 'ERROR' || Date.now() > deadline) return pod;
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('pods whose image is named like an Object.prototype member run as placeholders and reach RUNNING', async () => {
  for (const image of PROTOTYPE_NAMES) {
    assert.equal(t.services.runtime.runsAsPlaceholder?.(image), true, image);
    const res = await t.request(key, 'POST', '/v2/pods', {
      name: `p-${image}`,
      image,
      gpu: { id: 'NVIDIA GeForce RTX 4090' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const pod = await statusOf(json(res).id, 'RUNNING');
    assert.equal(pod.status, 'RUNNING', `${image}: ${pod.status} ${pod.statusReason ?? ''}`);
  }
});

test('a config mapping an image named __proto__ maps it, and leaves other prototype names unmapped', () => {
  const path = join(t.config.dataDir, 'proto-images.json');
  // Written as text: an object literal's __proto__ key would set its prototype, not a mapping.
  writeFileSync(path, '{"images": {"__proto__": {"command": ["true"]}}}');
  const config = loadConfig({ env: { GANTRY_DATA_DIR: t.config.dataDir, GANTRY_CONFIG: path } });
  assert.deepEqual(Object.keys(config.images), ['__proto__']);
  assert.deepEqual(config.images['__proto__']?.command, ['true']);
  assert.equal(config.images['constructor'], undefined);
});

/**
 * With runtime docker an image reference names the host the engine pulls from: every spelling of a
 * loopback, private, link-local or metadata address a tenant can write — numeric IPv4 forms,
 * IPv4-mapped and bracketed IPv6, upper case, `*.localhost`, tags and digests, names resolving
 * there — is refused where it enters (pods, templates; REST and GraphQL) with 400
 * IMAGE_NOT_ALLOWED, and never with a 5xx.
 */
describe('registry references that would aim the Docker Engine at the host or its network', () => {
  const HOSTILE = [
    '127.0.0.1:5000/x',
    '127.0.0.1/x:latest',
    '127.1:5000/x',
    '127.0.1:5000/x',
    '2130706433:5000/x',
    '0x7f000001:5000/x',
    '0x7f.0.0.1/x',
    '017700000001:5000/x',
    '0177.0.0.1/x',
    '0.0.0.0:2375/x',
    '0:2375/x',
    'localhost/x',
    'localhost:2375/x',
    'LOCALHOST/x',
    'LocalHost:5000/x',
    'docker.localhost/x',
    'a.b.localhost:80/x',
    '10.0.0.5/x',
    '10.255.255.255:443/x',
    '172.16.0.1/x',
    '172.31.255.254:5000/x',
    '192.168.0.1/x',
    '100.64.0.1/x',
    '169.254.169.254/latest/meta-data',
    '169.254.169.254:80/computeMetadata/v1:1',
    '169.254.170.2/v2/credentials',
    '224.0.0.1/x',
    '[::1]:5000/x',
    '[::1]/x',
    '[0:0:0:0:0:0:0:1]:5000/x',
    '[::]:5000/x',
    '[::ffff:7f00:1]:5000/x',
    '[::ffff:a9fe:a9fe]/x',
    '[fd00:ec2::254]/x',
    '[fe80::1]:5000/x',
    '[FC00::1]/x',
    '[64:ff9b::7f00:1]/x',
    '[2002:7f00:1::]/x',
    '127.0.0.1:5000/x@sha256:' + 'a'.repeat(64),
    '127.0.0.1:5000/x:tag@sha256:' + 'b'.repeat(64),
    'registry.corp.example:5000/x',
    'metadata.corp.example/x',
    'a_b.internal/x',
    'bad..name/x',
    '[::1/x',
    'host:99999/x',
  ];
  let t: TestApp;
  let runtime: FakeRuntime;
  let dockerKey: string;

  before(async () => {
    ({ t, runtime } = await dockerApp());
    dockerKey = (await t.newAccount('ssrf')).key;
  });
  after(() => t.close());

  test('every spelling is refused for pods and templates, over REST and GraphQL, with 400 IMAGE_NOT_ALLOWED and nothing started', async () => {
    const startedBefore = runtime.started.length;
    for (const image of HOSTILE) {
      assertImageRefused(
        await t.request(dockerKey, 'POST', '/v2/pods', { name: 'ssrf', image, gpu: { id: 'NVIDIA GeForce RTX 4090' } }),
        /^image is not allowed: its registry /,
        `pod ${image}`,
      );
      assertImageRefused(
        await t.request(dockerKey, 'POST', '/v2/templates', { name: 'ssrf', image }),
        /^image is not allowed: its registry /,
        `template ${image}`,
      );
      const res = await t.request(dockerKey, 'POST', '/graphql', {
        query: 'mutation d($input: PodFindAndDeployOnDemandInput) { podFindAndDeployOnDemand(input: $input) { id } }',
        variables: { input: { name: 'ssrf', imageName: image, gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuCount: 1 } },
      });
      assert.equal(res.statusCode, 200, image);
      assert.equal(json(res).errors?.[0]?.extensions?.code, 'IMAGE_NOT_ALLOWED', `GraphQL ${image}: ${res.body}`);
    }
    assert.deepEqual(json(await t.request(dockerKey, 'GET', '/v2/pods')).pods, []);
    assert.deepEqual(json(await t.request(dockerKey, 'GET', '/v2/templates')).templates, []);
    assert.equal(runtime.started.length, startedBefore);
  });

  test('references that only look like a host stay on Docker Hub and are accepted', async () => {
    // One component is always Docker Hub's library (`localhost:5000` is library/localhost, tag 5000).
    for (const image of [
      'localhost:5000',
      '127.0.0.1',
      'localhost',
      'team/localhost:5000',
      'library/ubuntu@sha256:' + 'c'.repeat(64),
    ]) {
      const res = await t.request(dockerKey, 'POST', '/v2/templates', { name: 'hub', imageName: image });
      assert.equal(res.statusCode, 201, `${image}: ${res.body}`);
    }
  });
});
