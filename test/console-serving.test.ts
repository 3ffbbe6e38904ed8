// The web console's files as the server serves them (src/http/routes/console.ts), from a console
// folder written here, and GET /v2/account, which tells the console what its key may do.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createTestApp, json, type TestApp } from './support/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'gantry-console-files-'));
const script = `console.info(${JSON.stringify('x'.repeat(4000))});\n`;
mkdirSync(join(dir, 'assets'));
writeFileSync(join(dir, 'index.html'), '<!doctype html><title>Gantry console</title>');
writeFileSync(join(dir, 'assets', 'index-Ab12Cd34.js'), script);
writeFileSync(join(dir, 'assets', 'index-Ef56Gh78.css'), 'body{margin:0}');

let t: TestApp;
let bare: TestApp;
before(async () => {
  t = await createTestApp({ consoleDir: dir });
  bare = await createTestApp({ consoleDir: join(dir, 'not-built') });
});
after(async () => {
  await t.close();
  await bare.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = (app: TestApp, url: string, headers: Record<string, string> = {}) =>
  app.app.inject({ method: 'GET', url, headers });

test('the console page is served at /console as HTML, never cached, under a CSP that allows only its own origin', async () => {
  for (const url of ['/console', '/console/']) {
    const res = await get(t, url);
    assert.equal(res.statusCode, 200, url);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.match(String(res.headers['content-security-policy']), /default-src 'self'/);
    assert.match(String(res.headers['content-security-policy']), /script-src 'self'(;|$)/);
    assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.match(res.body, /Gantry console/);
  }
});

test('hashed assets are served with their content type, cached for a year, gzipped for a client that takes gzip', async () => {
  const js = await get(t, '/console/assets/index-Ab12Cd34.js');
  assert.equal(js.statusCode, 200);
  assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
  assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.equal(js.body, script);
  const css = await get(t, '/console/assets/index-Ef56Gh78.css');
  assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
  const zipped = await get(t, '/console/assets/index-Ab12Cd34.js', { 'accept-encoding': 'gzip, br' });
  assert.equal(zipped.headers['content-encoding'], 'gzip');
  assert.equal(gunzipSync(zipped.rawPayload).toString(), script);
  assert.ok(zipped.rawPayload.length < script.length / 4);
  const again = await get(t, '/console/assets/index-Ab12Cd34.js', { 'if-none-match': String(js.headers.etag) });
  assert.equal(again.statusCode, 304);
});

test('a console file that does not exist is a 404 problem, and no path reaches outside the console folder', async () => {
  for (const url of [
    '/console/assets/index-00000000.js',
    '/console/..%2F..%2Fpackage.json',
    '/console/assets/..%2F..%2Findex.html.bak',
    '/console/%2e%2e/%2e%2e/etc/passwd',
  ]) {
    const res = await get(t, url, { accept: 'application/json' });
    assert.equal(res.statusCode, 404, url);
    assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8', url);
  }
});

test('a browser opening / is sent to /console; an API client gets the same 404 problem as before', async () => {
  const browser = await get(t, '/', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
  assert.equal(browser.statusCode, 302);
  assert.equal(browser.headers.location, '/console/');
  for (const accept of [undefined, 'application/json', '*/*']) {
    const res = await get(t, '/', accept ? { accept } : {});
    assert.equal(res.statusCode, 404, String(accept));
    assert.equal(json(res).code, 'ROUTE_NOT_FOUND');
  }
});

test('an installation whose console is not built says how to build it', async () => {
  const res = await get(bare, '/console');
  assert.equal(res.statusCode, 404);
  assert.match(json(res).detail, /npm run build/);
});

test('GET /v2/account names the account and the scope of the presented key; without a key it is 401', async () => {
  const { accountId, key, readKey } = await t.newAccount('console-team');
  const write = await t.request(key, 'GET', '/v2/account');
  assert.equal(write.statusCode, 200);
  assert.equal(json(write).id, accountId);
  assert.equal(json(write).name, 'console-team');
  assert.equal(json(write).key.scope, 'write');
  const read = await t.request(readKey, 'GET', '/v2/account');
  assert.equal(json(read).key.scope, 'read');
  assert.notEqual(json(read).key.id, json(write).key.id);
  assert.ok(!write.body.includes(key), 'the answer never echoes the key');
  assert.equal((await t.request(null, 'GET', '/v2/account')).statusCode, 401);
});
