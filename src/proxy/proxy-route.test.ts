import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostNameOf, routeOf } from './proxy-route.js';

const LABEL = 'abc123-8888-abcdefghijklmnopqrst';

test('a Host header is read as its lowercased name, without port or trailing dot; what is not a name is null', () => {
  assert.equal(hostNameOf('Pod.Proxy.Example:8081'), 'pod.proxy.example');
  assert.equal(hostNameOf('pod.proxy.example.'), 'pod.proxy.example');
  assert.equal(hostNameOf('[::1]:8081'), '[::1]');
  assert.equal(hostNameOf(undefined), null);
  assert.equal(hostNameOf('a b'), null);
  assert.equal(hostNameOf('x'.repeat(256)), null);
});

test('under the wildcard domain the Host names the pod port and the path goes on whole', () => {
  assert.deepEqual(routeOf(`${LABEL}.proxy.example:443`, '/lab?x=1', 'proxy.example'), {
    label: LABEL,
    path: '/lab?x=1',
    prefix: '',
  });
  // a deeper name under the domain is no label
  assert.equal(routeOf(`a.${LABEL}.proxy.example`, '/', 'proxy.example'), null);
});

test('otherwise the first path segment names it and is taken off; without its slash it redirects to it', () => {
  assert.deepEqual(routeOf('127.0.0.1:8081', `/${LABEL}/api/x?y=2`, null), {
    label: LABEL,
    path: '/api/x?y=2',
    prefix: `/${LABEL}`,
  });
  assert.deepEqual(routeOf('127.0.0.1:8081', `/${LABEL.toUpperCase()}/`, null), {
    label: LABEL,
    path: '/',
    prefix: `/${LABEL.toUpperCase()}`,
  });
  assert.deepEqual(routeOf('h', `/${LABEL}`, null), { redirect: `/${LABEL}/` });
  assert.deepEqual(routeOf('h', `/${LABEL}?a=1`, null), { redirect: `/${LABEL}/?a=1` });
  // a Host under another domain is routed by path, as if no domain matched
  assert.deepEqual(routeOf('other.example', `/${LABEL}/`, 'proxy.example'), {
    label: LABEL,
    path: '/',
    prefix: `/${LABEL}`,
  });
});

test('a request that names no pod port routes nowhere', () => {
  for (const url of ['/', '*', 'http://x/', '/a%2fb/', `/${'a'.repeat(64)}/`, '//x'])
    assert.equal(routeOf('h', url, null), null, url);
});
