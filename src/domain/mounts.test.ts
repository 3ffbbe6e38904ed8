import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './errors.js';
import { checkMountPath, checkMountPaths, mountPathRefusal } from './mounts.js';

test('a volume may be mounted at an ordinary absolute path, however it is spelled', () => {
  for (const path of [
    '/workspace',
    '/workspace/',
    '//data//models/',
    '/./runpod-volume',
    '/etc/app',
    '/procfs',
    '/devices',
    '/system',
    '/home/dev',
  ])
    assert.equal(mountPathRefusal(path), null, path);
});

test('/, /proc, /sys and /dev and everything under them are refused, once // and /./ and trailing slashes are taken out', () => {
  for (const path of [
    '/',
    '//',
    '/./',
    '/proc',
    '/proc/',
    '//proc',
    '/./proc',
    '/proc/sys',
    '/proc/self/fd',
    '/sys',
    '/sys/fs/cgroup/',
    '/dev',
    '/dev/shm',
    '///dev///pts//',
  ])
    assert.match(
      mountPathRefusal(path) ?? '',
      /a volume cannot be mounted (over the root|at \/(proc|sys|dev) or under it)/,
      path,
    );
});

test('a path with .. segments or that is not absolute is refused outright, not resolved', () => {
  for (const path of ['/workspace/../proc', '/a/..', '/..', '/x/../../dev'])
    assert.match(mountPathRefusal(path) ?? '', /"\.\."/, path);
  for (const path of ['workspace', 'proc', './x', '', ' /workspace'])
    assert.match(mountPathRefusal(path) ?? '', /absolute/, JSON.stringify(path));
});

test('a refused mount path is a 400 MOUNT_RULE naming the field and quoting the path', () => {
  assert.throws(
    () => checkMountPath('mounts.persistent.path (volumeMountPath)', '//proc/'),
    (err: unknown) =>
      err instanceof ApiError &&
      err.status === 400 &&
      err.code === 'MOUNT_RULE' &&
      err.detail.startsWith('mounts.persistent.path (volumeMountPath) "//proc/" is not a mount path') &&
      err.detail.includes('/proc'),
  );
  assert.throws(
    () =>
      checkMountPaths({
        network: [
          { volumeId: 'v1', path: '/data' },
          { volumeId: 'v2', path: '/sys/x' },
        ],
      }),
    (err: unknown) => err instanceof ApiError && err.detail.startsWith('mounts.network.1.path'),
  );
  assert.doesNotThrow(() => checkMountPaths({ persistent: { size: 20, path: '/workspace' } }));
});

test('a huge hostile path is quoted short, with its control characters escaped', () => {
  assert.throws(
    () => checkMountPath('volumeMountPath', `/dev/${'\n'.repeat(10_000)}`),
    (err: unknown) => err instanceof ApiError && err.detail.length < 1_500 && !err.detail.includes('\n'),
  );
});
