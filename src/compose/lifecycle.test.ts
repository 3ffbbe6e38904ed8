import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startInOrder, type Step } from './lifecycle.js';

/** Steps that write what they do to `log`; `failAt` names a step whose start throws. */
function recorded(names: string[], log: string[], failAt?: string): Step[] {
  return names.map((name) => ({
    name,
    start() {
      log.push(`start ${name}`);
      if (name === failAt) throw new Error(`${name} cannot start`);
    },
    stop() {
      log.push(`stop ${name}`);
    },
  }));
}

test('the steps start in the declared order and stop in exactly the reverse', async () => {
  const log: string[] = [];
  const started = await startInOrder(recorded(['store', 'runtime', 'listeners', 'adoption'], log));
  await started.stop();
  assert.deepEqual(log, [
    'start store',
    'start runtime',
    'start listeners',
    'start adoption',
    'stop adoption',
    'stop listeners',
    'stop runtime',
    'stop store',
  ]);
});

test('a second stop stops nothing again and waits for the first', async () => {
  const log: string[] = [];
  const started = await startInOrder(recorded(['a', 'b'], log));
  await Promise.all([started.stop(), started.stop()]);
  await started.stop();
  assert.deepEqual(log, ['start a', 'start b', 'stop b', 'stop a']);
});

test('a start that fails stops what had started, in reverse, and not the step that failed', async () => {
  const log: string[] = [];
  await assert.rejects(startInOrder(recorded(['a', 'b', 'c', 'd'], log, 'c')), /c cannot start/);
  assert.deepEqual(log, ['start a', 'start b', 'start c', 'stop b', 'stop a']);
});

test('a step named twice is refused before anything starts', async () => {
  const log: string[] = [];
  await assert.rejects(startInOrder(recorded(['a', 'b', 'a'], log)), /names "a" twice/);
  assert.deepEqual(log, []);
});

test('a stop that throws does not keep the steps before it from stopping', async () => {
  const log: string[] = [];
  const steps = recorded(['a', 'b', 'c'], log);
  steps[1]!.stop = () => {
    log.push('stop b');
    throw new Error('b is stuck');
  };
  const failures: string[] = [];
  const started = await startInOrder(steps, { onStopError: (step) => failures.push(step) });
  await started.stop();
  assert.deepEqual(log.slice(3), ['stop c', 'stop b', 'stop a']);
  assert.deepEqual(failures, ['b']);
});

test('each step start is timed by name', async () => {
  let t = 0;
  const steps: Step[] = [
    { name: 'slow', start: () => void (t += 40), stop: () => undefined },
    { name: 'quick', start: () => void (t += 2), stop: () => undefined },
  ];
  const started = await startInOrder(steps, { now: () => t });
  assert.deepEqual(started.times, { slow: 40, quick: 2 });
});
