import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registryOfImage } from './image-ref.js';
import {
  DEFAULT_REGISTRY_POLICY,
  judgeRegistry,
  judgeResolved,
  parseRegistryPattern,
  type RegistryPolicyConfig,
} from './registry-policy.js';

const judge = (ref: string, policy: Partial<RegistryPolicyConfig> = {}) =>
  judgeRegistry(registryOfImage(ref), { ...DEFAULT_REGISTRY_POLICY, ...policy });
const verdict = (ref: string, policy: Partial<RegistryPolicyConfig> = {}) => judge(ref, policy).verdict;

test('by default a public registry is allowed and one on a non-public address is refused, in every spelling', () => {
  const allowed = [
    'ubuntu:22.04',
    'pytorch/pytorch:2.4.0',
    'docker.io/library/ubuntu',
    'index.docker.io/library/ubuntu',
    '8.8.8.8/x',
    '8.8.8.8:5000/x',
    '[2606:4700::1111]:5000/x',
  ];
  const refused = [
    '127.0.0.1:5000/x',
    '127.1:5000/x',
    '2130706433:5000/x',
    '0x7f.1/x',
    '0177.0.0.1/x',
    'localhost/x',
    'localhost:8080/x',
    'LOCALHOST/x',
    'registry.localhost:5000/x',
    '10.0.0.5/x',
    '172.16.3.4:443/x',
    '192.168.1.10:5000/x',
    '169.254.169.254/latest',
    '100.64.0.1/x',
    '0.0.0.0:5000/x',
    '224.0.0.1/x',
    '[::1]:5000/x',
    '[::]:5000/x',
    '[fd00::5]/x',
    '[fe80::1]:5000/x',
    '[::ffff:7f00:1]:5000/x',
    '[ff02::1]/x',
  ];
  for (const ref of allowed) assert.equal(verdict(ref), 'allowed', ref);
  for (const ref of refused) assert.equal(verdict(ref), 'refused', ref);
  // An upper-case first component is a host to the engine: one that spells a public name is looked up.
  assert.deepEqual(judge('Metadata.Internal/x'), { verdict: 'resolve', host: 'metadata.internal' });
  assert.deepEqual(judge('Metadata/x'), { verdict: 'resolve', host: 'metadata' });
});

test('a refusal names the registry, why, and the setting that allows it', () => {
  const loopback = judge('127.0.0.1:5000/x');
  assert.equal(loopback.verdict, 'refused');
  assert.match(
    loopback.verdict === 'refused' ? loopback.reason : '',
    /^127\.0\.0\.1:5000 is not a public address \(loopback\), and the Docker Engine would reach it from the host's own network$/,
  );
  assert.match(loopback.verdict === 'refused' ? loopback.fix : '', /runtime\.docker\.registries\.allow/);
  const name = judge('localhost:8080/x');
  assert.match(
    name.verdict === 'refused' ? name.reason : '',
    /^localhost:8080 names the Docker host itself \(loopback\)/,
  );
  const metadata = judge('169.254.169.254/x');
  assert.match(metadata.verdict === 'refused' ? metadata.reason : '', /\(link-local\)/);
  const invalid = judge('a_b.example/x');
  assert.match(invalid.verdict === 'refused' ? invalid.reason : '', /"a_b\.example" is not a valid registry host/);
});

test('a host name is looked up; it is refused when any address it has is not public, and allowed when it has none', () => {
  assert.deepEqual(judge('registry.example.com/team/x'), { verdict: 'resolve', host: 'registry.example.com' });
  assert.deepEqual(judge('Registry.Example.com:5000/x'), { verdict: 'resolve', host: 'registry.example.com' });
  assert.equal(judgeResolved('registry.example.com', ['93.184.216.34']).verdict, 'allowed');
  assert.equal(
    judgeResolved('registry.example.com', []).verdict,
    'allowed',
    'a name that does not resolve fails at the pull, with its own reason',
  );
  const rebound = judgeResolved('registry.example.com', ['93.184.216.34', '10.1.2.3']);
  assert.equal(rebound.verdict, 'refused');
  const reason = rebound.verdict === 'refused' ? rebound.reason : '';
  assert.match(reason, /^host registry\.example\.com resolves to an address that is not public \(private\)/);
  assert.doesNotMatch(reason, /10\.1\.2\.3|93\.184/, 'the addresses a name resolved to are not repeated');
  assert.equal(judgeResolved('r.example', ['::1']).verdict, 'refused');
  assert.equal(judgeResolved('r.example', ['::ffff:169.254.169.254']).verdict, 'refused');
});

test('an allowed registry passes even on a private address; a port-less entry allows only the default port; a wildcard allows names under it', () => {
  const allow = ['localhost:5000', '10.0.0.5', '*.corp.example', '[::1]:5000', 'Registry.Internal:8443'];
  assert.equal(verdict('localhost:5000/x', { allow }), 'allowed');
  assert.equal(verdict('localhost:5001/x', { allow }), 'refused');
  assert.equal(verdict('10.0.0.5/x', { allow }), 'allowed');
  assert.equal(verdict('10.0.0.5:2375/x', { allow }), 'refused', 'another port of an allowed host is another service');
  assert.equal(verdict('a.corp.example/x', { allow }), 'allowed');
  assert.equal(verdict('a.b.corp.example/x', { allow }), 'allowed');
  assert.equal(verdict('a.corp.example:5000/x', { allow }), 'resolve');
  assert.equal(verdict('corp.example/x', { allow }), 'resolve', 'the wildcard is for names under the domain');
  assert.equal(verdict('evilcorp.example/x', { allow }), 'resolve');
  assert.equal(verdict('[::1]:5000/x', { allow }), 'allowed');
  assert.equal(verdict('registry.internal:8443/x', { allow }), 'allowed', 'compared case-insensitively');
});

test('with only, nothing but the allowed registries is allowed, Docker Hub included', () => {
  const policy = { allow: ['docker.io', 'ghcr.io', 'localhost:5000'], only: true };
  assert.equal(verdict('ubuntu', policy), 'allowed');
  assert.equal(verdict('ghcr.io/team/x', policy), 'allowed');
  assert.equal(verdict('localhost:5000/x', policy), 'allowed');
  const quay = judge('quay.io/team/x', policy);
  assert.equal(quay.verdict, 'refused');
  assert.match(
    quay.verdict === 'refused' ? `${quay.reason}; ${quay.fix}` : '',
    /^quay\.io is not one of the registries this server pulls from; an operator can add it to runtime\.docker\.registries\.allow$/,
  );
  assert.equal(verdict('ubuntu', { allow: ['ghcr.io'], only: true }), 'refused');
});

test('with private: allow, addresses are not checked, while only still holds', () => {
  assert.equal(verdict('127.0.0.1:5000/x', { private: 'allow' }), 'allowed');
  assert.equal(verdict('registry.example.com/x', { private: 'allow' }), 'allowed', 'no lookup is asked for');
  assert.equal(verdict('127.0.0.1:5000/x', { private: 'allow', only: true, allow: ['docker.io'] }), 'refused');
});

test('an allow entry is a registry host, with an optional port, or a wildcard over a domain', () => {
  assert.deepEqual(parseRegistryPattern('*.Corp.example:5000'), { host: 'corp.example', wildcard: true, port: 5000 });
  assert.deepEqual(parseRegistryPattern('[::1]:5000'), { host: '::1', wildcard: false, port: 5000 });
  for (const bad of ['http://registry', 'registry/path', '*', '*.', '*.10.0.0.5', '*.[::1]', 'a b', ''])
    assert.equal(typeof parseRegistryPattern(bad), 'string', bad);
});
