// Image names are tenant input: names of Object.prototype members must find no mapping in the
// config's `images` (they once resolved to prototype members and sent the pod to ERROR).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, json, type TestApp } from './support/harness.js';
import { loadConfig } from '../src/config.js';

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];

let t: TestApp;
let key: string;

before(async () => {
  t = await createTestApp({ file: { rateLimits: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 }, images: { 'mapped:1': { command: ['true'] } } } });
  key = (await t.newAccount('names')).key;
});
after(() => t.close());

async function statusOf(id: string, wanted: string, timeoutMs = 20_000): Promise<{ status: string; statusReason: string | null }> {
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
    const res = await t.request(key, 'POST', '/v2/pods', { name: `p-${image}`, image, gpu: { id: 'NVIDIA GeForce RTX 4090' } });
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
