import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  canonicalImage,
  imageIdProblem,
  parseRegistryHost,
  registryOf,
  registryOfImage,
  splitImageRef,
} from './image-ref.js';

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

test('references the engine stores under one name compare equal once canonical', () => {
  const same: Array<[string[], string, string]> = [
    [
      [
        'ubuntu',
        'ubuntu:latest',
        'library/ubuntu',
        'docker.io/library/ubuntu:latest',
        'index.docker.io/library/ubuntu',
      ],
      'docker.io/library/ubuntu',
      'docker.io/library/ubuntu:latest',
    ],
    [['team/app:1', 'docker.io/team/app:1'], 'docker.io/team/app', 'docker.io/team/app:1'],
    [
      ['REG.Example:5000/Team/app:1', 'reg.example:5000/Team/app:1'],
      'reg.example:5000/Team/app',
      'reg.example:5000/Team/app:1',
    ],
    [
      ['127.0.0.1:5000/x:1@sha256:' + 'b'.repeat(64), '127.0.0.1:5000/x@sha256:' + 'b'.repeat(64)],
      '127.0.0.1:5000/x',
      '127.0.0.1:5000/x@sha256:' + 'b'.repeat(64),
    ],
    [['[::1]:5000/team/app'], '[::1]:5000/team/app', '[::1]:5000/team/app:latest'],
    [['localhost:5000'], 'docker.io/library/localhost', 'docker.io/library/localhost:5000'],
  ];
  for (const [refs, repository, ref] of same)
    for (const image of refs) assert.deepEqual(canonicalImage(image), { repository, ref }, image);
  assert.notEqual(
    canonicalImage('ubuntu').repository,
    canonicalImage('registry-1.docker.io/library/ubuntu').repository,
  );
});

test('what reaches the engine is always a qualified name, never something it reads as an image ID prefix', () => {
  for (const image of ['7e3393d6ab3e', 'sha256:7e3393', 'abc', 'a'.repeat(64)]) {
    const { ref } = canonicalImage(image);
    assert.match(ref, /^docker\.io\/library\//, image);
  }
});

test('a reference by image ID, digest-style or the short hex docker images prints, is refused, naming why', () => {
  for (const image of ['sha256:' + 'a'.repeat(64), 'sha256:7e33', 'SHA512:ab', 'a'.repeat(64), '7e3393d6ab3e'])
    assert.match(imageIdProblem(image) ?? '', /names an image by its ID, not by repository/, image);
  for (const image of ['ubuntu', 'abc123', 'team/7e3393d6ab3e', 'ghcr.io/x@sha256:' + 'a'.repeat(64), 'deadbeef:1'])
    assert.equal(imageIdProblem(image), null, image);
});
