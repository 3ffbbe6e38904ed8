import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultCatalog } from '../domain/catalog.js';
import { endpointViolations, splitList } from './endpoint-settings.js';

const catalog = defaultCatalog();
const valid = {
  name: 'ep',
  templateId: 't1',
  type: 'QB' as const,
  gpuIds: ['ADA_24'],
  gpuCount: 1,
  instanceIds: [],
  locations: [],
  networkVolumeId: null,
  idleTimeout: 5,
  scalerType: 'QUEUE_DELAY' as const,
  scalerValue: 4,
  workersMin: 0,
  workersMax: 3,
  flashboot: false,
  flashBootKeepSeconds: 600,
  allowedCudaVersions: [],
  minCudaVersion: null,
  executionTimeoutMs: 600_000,
  env: {},
};

test('comma lists are split, trimmed and emptied of blanks; arrays of comma lists are flattened', () => {
  assert.deepEqual(splitList(' ADA_24, AMPERE_24 ,,'), ['ADA_24', 'AMPERE_24']);
  assert.deepEqual(splitList(''), []);
  assert.deepEqual(splitList(['12.1,12.2', '12.4']), ['12.1', '12.2', '12.4']);
});

test('the defaults with a name, template and pool break no rule', () => {
  assert.deepEqual(endpointViolations(valid, catalog), []);
});

test('an unknown GPU pool is named together with the valid ones', () => {
  const [problem] = endpointViolations({ ...valid, gpuIds: ['RTX_9000'] }, catalog);
  assert.match(problem!, /gpuIds: "RTX_9000" is not a GPU pool; valid pools: AMPERE_16, AMPERE_24, ADA_24/);
});

test('every broken rule is reported, one entry each', () => {
  const problems = endpointViolations(
    {
      ...valid,
      name: '',
      gpuIds: [],
      workersMin: 4,
      workersMax: 2,
      idleTimeout: 4000,
      scalerValue: 0,
      locations: ['XX'],
      allowedCudaVersions: ['12'],
      minCudaVersion: '12',
      executionTimeoutMs: 1000,
      env: { '1BAD': 'x' },
    },
    catalog,
  );
  for (const field of [
    'name',
    'gpuIds',
    'workersMax',
    'idleTimeout',
    'scalerValue',
    'locations',
    'allowedCudaVersions',
    'minCudaVersion',
    'executionTimeoutMs',
    'env',
  ])
    assert.ok(
      problems.some((p) => p.startsWith(`${field}:`)),
      `${field} is not reported in ${JSON.stringify(problems)}`,
    );
});

test('workersMax is capped by the configured maximum', () => {
  assert.deepEqual(endpointViolations({ ...valid, workersMax: 100 }, catalog), []);
  assert.match(endpointViolations({ ...valid, workersMax: 101 }, catalog)[0]!, /workersMax: must be between 0 and 100/);
  assert.match(endpointViolations({ ...valid, workersMax: 11 }, catalog, 10)[0]!, /between 0 and 10/);
});
