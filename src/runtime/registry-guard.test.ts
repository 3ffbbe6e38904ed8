import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isApiError } from '../domain/errors.js';
import { DEFAULT_REGISTRY_POLICY } from '../domain/registry-policy.js';
import { assertImageAllowed, RegistryGuard, type ResolveAddresses } from './registry-guard.js';

/** A resolver over a fixed table that records what it was asked; unknown names fail as ENOTFOUND does. */
function table(entries: Record<string, string[]>): ResolveAddresses & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (host: string) => {
    asked.push(host);
    const found = entries[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
  return Object.assign(resolve, { asked });
}

test('a registry host name resolving to a non-public address is refused, without repeating the address', async () => {
  const resolve = table({
    'registry.corp.example': ['10.20.30.40'],
    'cache.example': ['93.184.216.34', '::1'],
    'ghcr.io': ['140.82.112.34'],
  });
  const guard = new RegistryGuard({ resolve });
  const refusal = await guard.refusal('registry.corp.example:5000/team/app:1');
  assert.equal(
    refusal,
    "its registry host registry.corp.example:5000 resolves to an address that is not public (private), and the Docker Engine would reach it from the host's own network; an operator can allow it with runtime.docker.registries.allow",
  );
  assert.doesNotMatch(refusal, /10\.20\.30\.40/);
  assert.match(
    (await guard.refusal('cache.example/x'))!,
    /\(loopback\)/,
    'one non-public address among public ones is enough',
  );
  assert.equal(await guard.refusal('ghcr.io/team/app'), null);
  assert.deepEqual(resolve.asked, ['registry.corp.example', 'cache.example', 'ghcr.io']);
});

test('Docker Hub, IP literals and localhost are judged without a lookup', async () => {
  const resolve = table({});
  const guard = new RegistryGuard({ resolve });
  assert.equal(await guard.refusal('ubuntu:22.04'), null);
  assert.equal(await guard.refusal('docker.io/library/ubuntu'), null);
  assert.match(
    (await guard.refusal('127.0.0.1:5000/x'))!,
    /^its registry 127\.0\.0\.1:5000 is not a public address \(loopback\)/,
  );
  assert.match((await guard.refusal('localhost:8080/x'))!, /^its registry localhost:8080 names the Docker host itself/);
  assert.equal(await guard.refusal('8.8.8.8/x'), null);
  assert.deepEqual(resolve.asked, []);
});

test('a name that does not resolve, or not in time, is not refused: the pull fails with its own reason', async () => {
  assert.equal(await new RegistryGuard({ resolve: table({}) }).refusal('nowhere.example/x'), null);
  // A lookup that never answers: the wait given to the guard ends it.
  let waited = 0;
  const guard = new RegistryGuard({
    resolve: () => new Promise(() => undefined),
    resolveTimeoutMs: 1234,
    wait: async (ms) => {
      waited = ms;
    },
  });
  assert.equal(await guard.refusal('slow.example/x'), null);
  assert.equal(waited, 1234);
});

test('the timeout is let go once the lookup answers', async () => {
  let signal: AbortSignal | null = null;
  const guard = new RegistryGuard({
    resolve: async () => ['10.0.0.1'],
    wait: (_ms, s) => {
      signal = s;
      return new Promise<void>((resolve) => s.addEventListener('abort', () => resolve()));
    },
  });
  assert.match((await guard.refusal('fast.example/x'))!, /\(private\)/);
  assert.equal((signal as AbortSignal | null)?.aborted, true);
});

test('an allowed registry is not looked up; with only, any other is refused before a lookup', async () => {
  const resolve = table({ 'registry.corp.example': ['10.0.0.9'] });
  const guard = new RegistryGuard({
    resolve,
    policy: { allow: ['registry.corp.example', 'docker.io'], only: true, private: 'refuse' },
  });
  assert.equal(await guard.refusal('registry.corp.example/x'), null);
  assert.equal(await guard.refusal('ubuntu'), null);
  assert.match(
    (await guard.refusal('ghcr.io/x'))!,
    /^its registry ghcr\.io is not one of the registries this server pulls from; an operator can add it to runtime\.docker\.registries\.allow$/,
  );
  assert.deepEqual(resolve.asked, []);
});

test('assertImageAllowed answers 400 IMAGE_NOT_ALLOWED naming the field; without a guard every image passes', async () => {
  const guard = new RegistryGuard({ policy: DEFAULT_REGISTRY_POLICY, resolve: table({}) });
  await assert.rejects(assertImageAllowed(guard, '[::1]:5000/x', 'imageName'), (err: unknown) => {
    assert.ok(isApiError(err));
    assert.equal(err.code, 'IMAGE_NOT_ALLOWED');
    assert.equal(err.status, 400);
    assert.match(
      err.detail,
      /^imageName is not allowed: its registry \[::1\]:5000 is not a public address \(loopback\)/,
    );
    return true;
  });
  await assertImageAllowed(null, '127.0.0.1:5000/x');
  await assertImageAllowed(guard, 'ubuntu');
});

test('an image named by its ID is refused before any registry is judged or looked up: an ID could name another account’s private image', async () => {
  const resolve = table({});
  const guard = new RegistryGuard({ policy: { allow: [], only: true, private: 'refuse' }, resolve });
  for (const image of ['sha256:' + 'e'.repeat(64), 'sha256:7e33', '7e3393d6ab3e', 'f'.repeat(64)])
    assert.match((await guard.refusal(image)) ?? '', /names an image by its ID, not by repository/, image);
  await assert.rejects(assertImageAllowed(guard, 'sha256:7e33'), (err: unknown) => {
    assert.ok(isApiError(err));
    assert.equal(err.code, 'IMAGE_NOT_ALLOWED');
    assert.match(err.detail, /^image is not allowed: "sha256:7e33" names an image by its ID/);
    return true;
  });
  assert.deepEqual(resolve.asked, []);
});
