import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  HOLDING_WORKER_STATUSES,
  LIVE_WORKER_STATUSES,
  TERMINAL_WORKER_STATUSES,
  WORKER_STATUSES,
  isTerminalWorkerStatus,
} from './worker-state.js';

test('a worker holds what it was given on its host in every status but the terminal one, and takes work only live', () => {
  assert.deepEqual(
    [...HOLDING_WORKER_STATUSES],
    WORKER_STATUSES.filter((s) => !isTerminalWorkerStatus(s)),
  );
  assert.deepEqual([...TERMINAL_WORKER_STATUSES], ['dead']);
  assert.ok(LIVE_WORKER_STATUSES.every((s) => (HOLDING_WORKER_STATUSES as readonly string[]).includes(s)));
});
