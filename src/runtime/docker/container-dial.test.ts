import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ContainerInspect } from './engine-types.js';
import { containerAddress } from './container-dial.js';

const inspect = (over: Partial<ContainerInspect>): ContainerInspect =>
  ({
    Id: 'c1',
    Name: '/c1',
    Config: { Image: 'i', Labels: null, Env: null },
    HostConfig: {},
    NetworkSettings: {
      Networks: { 'gantry-acct-a': { IPAddress: '172.30.0.5' } },
      Ports: { '8888/tcp': [{ HostIp: '0.0.0.0', HostPort: '31001' }] },
    },
    ...over,
  }) as ContainerInspect;

const local = { localEngine: true, engineHost: '127.0.0.1' };
const remote = { localEngine: false, engineHost: 'gpu-1.internal' };

test('beside a local engine, a container port is dialled at the container’s own address', () => {
  assert.deepEqual(containerAddress(inspect({}), 8888, local), { host: '172.30.0.5', port: 8888 });
});

test('with a remote engine, at the port it is published on, on the engine’s host', () => {
  assert.deepEqual(containerAddress(inspect({}), 8888, remote), { host: 'gpu-1.internal', port: 31001 });
  assert.match(
    String((containerAddress(inspect({}), 9999, remote) as { refused: string }).refused),
    /not one of its ports/,
  );
  // beside a local engine too: its address answers on any port, only its own are dialled
  assert.match(
    String((containerAddress(inspect({}), 9999, local) as { refused: string }).refused),
    /not one of its ports/,
  );
});

test('a container on the host’s network is dialled on the port itself', () => {
  assert.deepEqual(containerAddress(inspect({ HostConfig: { NetworkMode: 'host' } }), 8000, local), {
    host: '127.0.0.1',
    port: 8000,
  });
});

test('a local container without an address falls back to its published port, on its bind address', () => {
  const bare = inspect({
    NetworkSettings: { Networks: {}, Ports: { '8888/tcp': [{ HostIp: '10.1.2.3', HostPort: '31002' }] } },
  });
  assert.deepEqual(containerAddress(bare, 8888, local), { host: '10.1.2.3', port: 31002 });
});
