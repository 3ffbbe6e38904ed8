/**
 * One health check of a load-balancing worker: `GET {HEALTH_CHECK_PATH}` on its `PORT_HEALTH`,
 * through the runtime's way into the instance (`Runtime.connect`), on a connection of its own that
 * is closed after the answer. Answers the status, or an Error saying why there was none (nothing
 * listens yet, no answer within `timeoutMs`). What the answer's body says is not read.
 */
import { request } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Runtime } from '../runtime/runtime.js';
import type { LbWorkerInfo } from './lb-pool.js';

export function healthProbe(
  runtime: Pick<Runtime, 'connect' | 'name'>,
  timeoutMs: number,
): (worker: LbWorkerInfo) => Promise<number | Error> {
  return async (worker) => {
    if (!runtime.connect) return new Error(`runtime ${runtime.name} cannot reach a worker's port`);
    let socket: Duplex;
    try {
      socket = await runtime.connect(worker.workerId, worker.healthPort, {
        timeoutMs,
        hostPort: worker.hostPorts?.[worker.healthPort],
      });
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
    return new Promise<number | Error>((resolve) => {
      const req = request({
        createConnection: () => socket,
        method: 'GET',
        path: worker.healthPath,
        headers: { host: 'localhost', connection: 'close', 'user-agent': 'gantry-health' },
      });
      const timer = setTimeout(
        () => req.destroy(new Error(`no answer within ${timeoutMs} ms (proxy.loadBalancer.healthTimeoutMs)`)),
        timeoutMs,
      );
      req.once('response', (res) => {
        clearTimeout(timer);
        res.resume();
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.once('error', (err) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(err);
      });
      req.end();
    });
  };
}
