import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  clusterQuotaRefusal,
  resourceQuotaRefusal,
  storedBytesRefusal,
  streamQuotaRefusal,
  submitQuotaRefusal,
} from './quotas.js';

const quotas = { pods: 3, gpus: 4, clusters: 2, queuedJobs: 10, storedJobBytes: 1000, streamBytesPerJob: 100 };

test('a demand that reaches a quota exactly fits; one more is refused naming the quota and its value', () => {
  assert.equal(resourceQuotaRefusal({ pods: 2, gpus: 2 }, { pods: 1, gpus: 2 }, quotas), null);
  assert.match(resourceQuotaRefusal({ pods: 3, gpus: 0 }, { pods: 1, gpus: 0 }, quotas)!, /quotas\.pods = 3/);
  assert.match(resourceQuotaRefusal({ pods: 0, gpus: 3 }, { pods: 1, gpus: 2 }, quotas)!, /quotas\.gpus = 4/);
});

test('a start or a worker (no new pod) is never refused for the pods quota, and a CPU pod never for the GPU quota', () => {
  assert.equal(resourceQuotaRefusal({ pods: 9, gpus: 0 }, { pods: 0, gpus: 1 }, quotas), null);
  assert.equal(resourceQuotaRefusal({ pods: 0, gpus: 9 }, { pods: 1, gpus: 0 }, quotas), null);
});

test('a submission is refused at the queued-jobs quota, then at the stored-bytes quota, each named', () => {
  assert.equal(submitQuotaRefusal({ queuedJobs: 9, storedBytes: 900 }, 100, quotas), null);
  assert.match(submitQuotaRefusal({ queuedJobs: 10, storedBytes: 0 }, 1, quotas)!, /quotas\.queuedJobs = 10/);
  assert.match(submitQuotaRefusal({ queuedJobs: 0, storedBytes: 901 }, 100, quotas)!, /quotas\.storedJobBytes = 1000/);
  assert.match(storedBytesRefusal({ queuedJobs: 0, storedBytes: 1000 }, 1, quotas)!, /quotas\.storedJobBytes = 1000/);
});

test('a stream chunk is refused once the job’s unread chunks would pass the per-job quota', () => {
  assert.equal(streamQuotaRefusal('j1', 60, 40, quotas), null);
  assert.match(streamQuotaRefusal('j1', 61, 40, quotas)!, /quotas\.streamBytesPerJob = 100/);
});

test('an account may hold up to quotas.clusters clusters; one more is refused naming the quota and its value', () => {
  assert.equal(clusterQuotaRefusal(1, quotas), null);
  assert.match(clusterQuotaRefusal(2, quotas)!, /holds 2 clusters, its quota \(quotas\.clusters = 2\)/);
  assert.match(clusterQuotaRefusal(0, { clusters: 0 })!, /quotas\.clusters = 0/);
});
