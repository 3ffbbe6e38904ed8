import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isLoopbackUrl, workerNetworkMode } from './worker-network.js';

test("a worker's job URL on loopback puts it on the host network; any other URL, or none that parses, gives it its own", () => {
  for (const url of [
    'http://127.0.0.1:8080',
    'http://127.10.0.1',
    'http://localhost:8080',
    'http://LOCALHOST',
    'http://api.localhost',
    'http://[::1]:8080',
    'http://[::ffff:127.0.0.1]',
    'http://2130706433:8080',
    'http://127.1',
  ])
    assert.equal(workerNetworkMode(url), 'host', url);
  for (const url of [
    'http://10.0.0.5:8080',
    'http://172.17.0.1:8080',
    'https://api.example.test',
    'http://[::2]',
    'http://localhost.example.test',
    'http://128.0.0.1',
    'not a url',
  ])
    assert.equal(workerNetworkMode(url), 'default', url);
  assert.equal(isLoopbackUrl('http://128.0.0.1'), false);
});
