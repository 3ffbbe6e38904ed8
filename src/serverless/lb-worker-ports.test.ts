import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lbHostPorts, lbListenPorts, lbWorkerPorts } from './lb-worker-ports.js';

test('a worker listens on PORT (80 by default) and answers its health on PORT_HEALTH (PORT by default) at /ping', () => {
  assert.deepEqual(lbWorkerPorts({ env: {} }, null), { port: 80, healthPort: 80, healthPath: '/ping' });
  assert.deepEqual(
    lbWorkerPorts({ env: { PORT_HEALTH: '5001' } }, { env: { PORT: '5000', HEALTH_CHECK_PATH: 'health' } }),
    {
      port: 5000,
      healthPort: 5001,
      healthPath: '/health',
    },
  );
  assert.deepEqual(lbListenPorts({ port: 5000, healthPort: 5001, healthPath: '/ping' }), [5000, 5001]);
  assert.deepEqual(lbListenPorts({ port: 5000, healthPort: 5000, healthPath: '/ping' }), [5000]);
});

test("the endpoint's env wins over its template's, and values that are no port or path take the defaults", () => {
  assert.equal(lbWorkerPorts({ env: { PORT: '7000' } }, { env: { PORT: '5000' } }).port, 7000);
  for (const bad of ['0', '65536', 'eighty', '-1', '80 81', ''])
    assert.equal(lbWorkerPorts({ env: { PORT: bad } }, null).port, 80, bad);
  for (const bad of ['/a b', '/\r\nX: y', '/é'])
    assert.equal(lbWorkerPorts({ env: { HEALTH_CHECK_PATH: bad } }, null).healthPath, '/ping', JSON.stringify(bad));
});

test("a worker learnt from the store is dialled at the host ports its launch recorded, PORT's first, then PORT_HEALTH's", () => {
  assert.deepEqual(lbHostPorts({ port: 5000, healthPort: 5001, healthPath: '/ping' }, [31000, 31001]), {
    5000: 31000,
    5001: 31001,
  });
  assert.deepEqual(lbHostPorts({ port: 80, healthPort: 80, healthPath: '/ping' }, [31000]), { 80: 31000 });
  assert.deepEqual(lbHostPorts({ port: 80, healthPort: 80, healthPath: '/ping' }, []), {}, 'none recorded: none');
});
