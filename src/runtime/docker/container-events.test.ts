// The engine's side of an order no real engine shows on demand: the kernel's OOM notice reaching
// the engine after the exit it caused, so the container's state says only "exit code 137" and the
// `oom` event comes after the `die`. A stand-in client plays that engine (the real-engine test in
// docker-runtime.test.ts meets the order only under load).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { InstanceStatus } from '../runtime.js';
import type { DockerClient } from './docker-client.js';
import { onContainerEvent } from './container-events.js';
import type { Supervision } from './container-instance.js';
import { LABEL } from './docker-names.js';
import type { ContainerInspect, EngineEvent } from './engine-types.js';
import { LiveInstances, newLive } from './live-instances.js';

const event = (Action: string): EngineEvent => ({
  Type: 'container',
  Action,
  Actor: { ID: 'c1', Attributes: { [LABEL.instance]: 'i1' } },
  time: 0,
  timeNano: 0,
});

/** A running instance `i1` in container `c1` with `memoryBytes`, and an engine whose state of it says exit 137, no OOMKilled. */
function world(memoryBytes: number) {
  let inspected!: () => void;
  const inspectedOnce = new Promise<void>((resolve) => (inspected = resolve));
  const client = {
    inspectContainer: async () => {
      inspected();
      return { State: { Running: false, ExitCode: 137, OOMKilled: false, Error: '' } } as ContainerInspect;
    },
    containerLogs: async () => 'allocating\n',
  };
  const logger = pino({ level: 'silent' });
  const live = new LiveInstances(logger);
  const s: Supervision = {
    client: client as unknown as DockerClient,
    live,
    options: { clock: { now: () => 0 }, logger, stopGraceMs: 1000 },
    events: { reportUnreachable: () => {} },
    hide: (text) => text,
  };
  const instance = newLive('i1', 'c1', memoryBytes, null);
  instance.launched = true;
  instance.status = { ...instance.status, state: 'running' };
  live.add(instance);
  const ended = new Promise<InstanceStatus>((resolve) =>
    live.onChange((status) => {
      if (status.state === 'failed' || status.state === 'exited') resolve(status);
    }),
  );
  return { s, inspectedOnce, ended };
}

test("a container with a memory limit whose oom event comes after its exit fails for its memory, though the engine's state says only exit 137", async () => {
  const { s, inspectedOnce, ended } = world(64 * 1024 ** 2);
  onContainerEvent(s, event('die'));
  await inspectedOnce;
  onContainerEvent(s, event('oom'));
  const status = await ended;
  assert.equal(status.state, 'failed');
  assert.equal(status.exitCode, 137);
  assert.match(
    status.reason ?? '',
    /^process was killed for running out of memory \(its limit of 0\.06 GiB\), exit code 137; last output:\nallocating/,
  );
});

test('a container without a memory limit that exits 137 was killed by SIGKILL, with no oom event waited for', async () => {
  const { s, ended } = world(0);
  onContainerEvent(s, event('die'));
  const status = await ended;
  assert.equal(status.state, 'exited');
  assert.match(status.reason ?? '', /^process was killed by SIGKILL \(exit code 137\)/);
});
