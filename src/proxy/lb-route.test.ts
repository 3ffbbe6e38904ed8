import { test } from 'node:test';
import assert from 'node:assert/strict';
import { affinityOf, lbRouteOf } from './lb-route.js';

test('a path under /lb/{endpointId} names the endpoint and loses its prefix; its bare form is the root', () => {
  assert.deepEqual(lbRouteOf('gantry:8081', '/lb/abc123/v1/chat?x=1', null), {
    endpointId: 'abc123',
    path: '/v1/chat?x=1',
    prefix: '/lb/abc123',
  });
  assert.deepEqual(lbRouteOf('gantry:8081', '/lb/abc123', null), {
    endpointId: 'abc123',
    path: '/',
    prefix: '/lb/abc123',
  });
  assert.deepEqual(lbRouteOf('gantry:8081', '/lb/abc123?q=1', null), {
    endpointId: 'abc123',
    path: '/?q=1',
    prefix: '/lb/abc123',
  });
});

test('with a wildcard domain the Host names the endpoint and the whole path goes on', () => {
  assert.deepEqual(lbRouteOf('abc123.lb.example.com:8081', '/ping', 'lb.example.com'), {
    endpointId: 'abc123',
    path: '/ping',
    prefix: '',
  });
  // a pod proxy name (with dashes) under the domain is not an endpoint id
  assert.equal(lbRouteOf('pod-8888-token.lb.example.com', '/', 'lb.example.com'), null);
});

test('what is not an endpoint id is left to the pod proxy', () => {
  for (const url of ['/', '/lb/', '/lb//x', '/lb/a-b/x', '/lb/%2e%2e/x', '/abc-8888-token/', '/lbx/abc/'])
    assert.equal(lbRouteOf('gantry', url, null), null, url);
});

test('X-Runpod-Worker-Id: an id alone is soft, `strict <id>` strict, `strict-resume <id>` strict and resuming; anything else no preference', () => {
  assert.deepEqual(affinityOf('W1'), { preferred: 'w1', strict: false, resume: false });
  assert.deepEqual(affinityOf(' strict w1 '), { preferred: 'w1', strict: true, resume: false });
  assert.deepEqual(affinityOf('Strict-Resume w1'), { preferred: 'w1', strict: true, resume: true });
  for (const other of [undefined, '', 'resume w1', 'strict-resume', ['strict w1'], 'strict w1 w2'])
    assert.deepEqual(affinityOf(other), { preferred: null, strict: false, resume: false }, JSON.stringify(other));
});
