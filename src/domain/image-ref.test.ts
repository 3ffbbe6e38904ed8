import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRegistryHost, registryOf, registryOfImage, splitImageRef } from './image-ref.js';

test('a reference without a tag pulls latest, never every tag; a digest is kept whole', () => {
  assert.deepEqual(splitImageRef('busybox'), { repo: 'busybox', tag: 'latest' });
  assert.deepEqual(splitImageRef('registry:5000/team/app'), { repo: 'registry:5000/team/app', tag: 'latest' });
  assert.deepEqual(splitImageRef('registry:5000/team/app:1.2'), { repo: 'registry:5000/team/app', tag: '1.2' });
  assert.deepEqual(splitImageRef('team/app@sha256:abc'), { repo: 'team/app', tag: 'sha256:abc' });
  assert.deepEqual(splitImageRef('[::1]:5000/team/app'), { repo: '[::1]:5000/team/app', tag: 'latest' });
  assert.deepEqual(splitImageRef('localhost:5000'), { repo: 'localhost', tag: '5000' });
});

test('the registry of a repository is its first component when that is a host, else Docker Hub', () => {
  assert.equal(registryOf('team/app'), 'docker.io');
  assert.equal(registryOf('busybox'), 'docker.io');
  assert.equal(registryOf('ghcr.io/team/app'), 'ghcr.io');
  assert.equal(registryOf('localhost/app'), 'localhost');
  assert.equal(registryOf('127.0.0.1:5000/app'), '127.0.0.1:5000');
});

test('the registry a pull contacts is found as the engine finds it, tags, digests and IPv6 literals included', () => {
  const table: Array<[string, string]> = [
    ['ubuntu', 'docker.io'],
    ['ubuntu:22.04', 'docker.io'],
    ['library/ubuntu@sha256:' + 'a'.repeat(64), 'docker.io'],
    ['docker.io/library/ubuntu', 'docker.io'],
    ['index.docker.io/library/ubuntu', 'docker.io'],
    ['registry-1.docker.io/library/ubuntu', 'registry-1.docker.io'],
    ['ghcr.io/team/app:1.2', 'ghcr.io'],
    ['127.0.0.1:5000/x', '127.0.0.1:5000'],
    ['127.0.0.1:5000/x:1@sha256:' + 'b'.repeat(64), '127.0.0.1:5000'],
    ['10.0.0.5/x', '10.0.0.5'],
    ['169.254.169.254/latest/meta-data', '169.254.169.254'],
    ['localhost/x', 'localhost'],
    ['localhost:8080/x', 'localhost:8080'],
    ['[::1]:5000/x', '[::1]:5000'],
    ['[fd00::5]/team/x@sha256:' + 'c'.repeat(64), '[fd00::5]'],
    ['registry:5000/x', 'registry:5000'],
    // an upper-case first component cannot be a repository: the engine takes it for a host
    ['LOCALHOST/x', 'LOCALHOST'],
    ['Metadata/x', 'Metadata'],
    // one component only: Docker Hub's library, whatever it looks like
    ['localhost:5000', 'docker.io'],
    ['127.0.0.1', 'docker.io'],
    ['team/app', 'docker.io'],
  ];
  for (const [ref, registry] of table) assert.equal(registryOfImage(ref), registry, ref);
});

test('a registry host is host, host:port or a bracketed IPv6 address, as the reference grammar writes them', () => {
  assert.deepEqual(parseRegistryHost('Registry.Example.com:5000'), {
    host: 'registry.example.com',
    port: 5000,
    bracketed: false,
  });
  assert.deepEqual(parseRegistryHost('[::1]:5000'), { host: '::1', port: 5000, bracketed: true });
  assert.deepEqual(parseRegistryHost('[FD00::5]'), { host: 'fd00::5', port: null, bracketed: true });
  assert.deepEqual(parseRegistryHost('localhost'), { host: 'localhost', port: null, bracketed: false });
  for (const bad of [
    '',
    '::1',
    'a_b.example',
    'example.com.',
    '-x.example',
    'x:',
    'x:port',
    'x:1:2',
    '[::1',
    '[::1]x',
    '[127.0.0.1]',
    '[fe80::1%eth0]',
    'user@host',
    'host:123456',
    'host:65536',
  ])
    assert.equal(parseRegistryHost(bad), null, bad);
});
