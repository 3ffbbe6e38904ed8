import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hideHostPaths } from './host-paths.js';

const ID = '2bdcb4e84ce9f6334316856b2d4486202808d0fb3d49d887600de1e3588008b3';
const ROOT = '/tmp/gshared/root';

// Messages a Docker 20.10 engine answered when a volume was mounted where it cannot be.
test('a volume folder on the host becomes <volume>, and a path in a root filesystem the path the container sees', () => {
  assert.equal(
    hideHostPaths(
      `error during container init: error mounting "${ROOT}/volumes/gantry-x-pod1/_data" to rootfs at "/etc/hostname": mount ${ROOT}/volumes/gantry-x-pod1/_data:/etc/hostname (via /proc/self/fd/6), flags: 0x5000: not a directory: unknown`,
      [ROOT],
    ),
    'error during container init: error mounting "<volume>" to rootfs at "/etc/hostname": mount <volume>:/etc/hostname (via /proc/self/fd/6), flags: 0x5000: not a directory: unknown',
  );
  assert.equal(
    hideHostPaths(`lstat ${ROOT}/overlay2/${ID}/merged/bin/busybox/x: not a directory`),
    'lstat /bin/busybox/x: not a directory',
  );
  assert.equal(
    hideHostPaths(`"${ROOT}/overlay2/${ID}/merged/proc" cannot be mounted because it is not of type proc`),
    '"/proc" cannot be mounted because it is not of type proc',
  );
  assert.equal(hideHostPaths(`at ${ROOT}/overlay2/${ID}/merged.`), 'at /.');
  assert.equal(
    hideHostPaths(`open /run/containerd/io.containerd.runtime.v2.task/moby/${ID}/rootfs/etc/app.conf: denied`),
    'open /etc/app.conf: denied',
  );
});

test("the engine's roots, the ones given, and paths naming a container or layer id are <host path>", () => {
  assert.equal(
    hideHostPaths(`open ${ROOT}/containers/abc/hostname: no such file`, [ROOT]),
    'open <host path>: no such file',
  );
  assert.equal(hideHostPaths('read /var/lib/docker/image/overlay2/repositories.json.'), 'read <host path>.');
  assert.equal(hideHostPaths(`stat /srv/elsewhere/${ID}/config.v2.json: gone`), 'stat <host path>: gone');
  assert.equal(
    hideHostPaths(`open /tmp/gshared/exec/runtime-runc/moby/${ID}/state.json: busy`),
    'open <host path>: busy',
  );
  assert.equal(
    hideHostPaths(
      'the Docker Engine at unix:///tmp/gshared/docker.sock is unreachable: connect ENOENT /tmp/gshared/docker.sock',
      ['/tmp/gshared'],
    ),
    'the Docker Engine at unix:<host path> is unreachable: connect ENOENT <host path>',
  );
});

test("the container's own paths, and text that only looks like paths, are kept", () => {
  for (const text of [
    'exec: "/nope": stat /nope: no such file or directory: unknown',
    "invalid mount config for type \"volume\": invalid specification: destination can't be '/'",
    'process exited with code 3; last output:\nboom at /workspace/run.py line 4',
    'pulling image "registry.example.com/team/app:1": not found',
    'see https://docs.docker.com/engine/ and 12/24 of /tmp/scratch',
    'cannot reach http://10.0.0.5:8000/health (ECONNREFUSED)',
  ])
    assert.equal(hideHostPaths(text, [ROOT]), text, text);
});

test('a root given as / or relative hides nothing more', () => {
  assert.equal(hideHostPaths('open /etc/hosts', ['/', 'relative', '']), 'open /etc/hosts');
});
