/**
 * FlashBoot on a load-balancing endpoint end to end (issue 30; docs/load-balancing.md "Scaling"):
 * a whole server on the process runtime whose workers are real processes
 * (test/fixtures/lb-worker.mjs), reached through the proxy listener with real HTTP. The autoscaler's
 * time is a FakeClock (idle timeouts and keep time move only when the test advances it); workers,
 * health checks, suspension (SIGSTOP: /proc says `T`) and waits are real.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '../src/domain/clock.js';
import { eventually } from './support/eventually.js';
import { afterTimersDue } from './support/timers-due.js';
import { startProxyFixture, type ProxyFixture } from './support/proxy-fixture.js';
import type { SshTenant } from './support/ssh-fixture.js';

const LB_WORKER = 'test/lb-worker';
const HEALTH_TIMEOUT_MS = 300;
const KEEP_MS = 60_000;

/** The state letter of a process (`/proc/PID/stat`: `T` stopped), or null when it is gone. */
function processState(pid: number): string | null {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return null;
  const stat = readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? null;
}

interface Whoami {
  workerId: string;
  pid: number;
  boot: string;
}

describe('FlashBoot on a load-balancing endpoint (process runtime, real workers)', () => {
  let f: ProxyFixture;
  let owner: SshTenant;
  const clock = new FakeClock(Date.now());

  before(async () => {
    f = await startProxyFixture(
      {
        images: {
          [LB_WORKER]: { command: [process.execPath, join(import.meta.dirname, 'fixtures', 'lb-worker.mjs')] },
        },
        proxy: {
          port: 0,
          loadBalancer: { workerWaitMs: 60_000, healthIntervalMs: 100, healthTimeoutMs: HEALTH_TIMEOUT_MS },
        },
        serverless: { autoscaler: { intervalMs: 100, nudgeGapMs: 0 }, flashboot: { maxKeepMs: KEEP_MS } },
      },
      { clock },
    );
    owner = await f.tenant('lbf-owner');
  });
  after(() => f?.close());

  const services = () => f.server.server.services;
  const lbUrl = (endpointId: string, path = '/whoami') => `${f.server.server.proxy!.url}/lb/${endpointId}${path}`;
  const auth = () => ({ authorization: `Bearer ${owner.key}` });
  const status = async (id: string) =>
    (await services().db.kysely.selectFrom('workers').select('status').where('id', '=', id).executeTakeFirst())?.status;

  const whoami = async (endpointId: string, affinity?: string): Promise<Whoami> => {
    const res = await fetch(lbUrl(endpointId), {
      headers: { ...auth(), ...(affinity ? { 'x-runpod-worker-id': affinity } : {}) },
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as Whoami;
    assert.equal(res.headers.get('x-runpod-worker-id'), body.workerId);
    return body;
  };

  /** Advances the autoscaler's clock past the idle timeout and waits for the worker to be frozen. */
  const idleUntilSuspended = async (w: Whoami) => {
    clock.advance(5_000);
    await eventually(`worker ${w.workerId} to be suspended`, async () => (await status(w.workerId)) === 'suspended');
    await eventually(`process ${w.pid} to be stopped`, async () => processState(w.pid) === 'T');
  };

  test('an idle worker is suspended (out of the ready set, its process stopped, no health check sent); the next request resumes the same process with no launch; strict to it is 404 without resuming it, strict-resume resumes it; its keep time over, it is removed', async () => {
    const { autoscaler, lb, systemLog } = services();
    const endpoint = await services().endpoints.create(owner.accountId, {
      name: 'lb-flash',
      type: 'LB',
      templateId: (
        await services().templates.create(owner.accountId, {
          name: 'lbf',
          imageName: LB_WORKER,
          isServerless: true,
          containerDiskInGb: 5,
        })
      ).id,
      gpuIds: 'ADA_24',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      scalerType: 'REQUEST_COUNT',
      scalerValue: 1,
      flashboot: true,
    });
    const first = await whoami(endpoint.id);
    assert.deepEqual(autoscaler.workerIds(endpoint.id), [first.workerId]);

    await idleUntilSuspended(first);
    assert.deepEqual(autoscaler.workerIds(endpoint.id), [first.workerId], 'kept, not stopped');
    assert.equal(lb.workerState(first.workerId)?.ready, false, 'out of the ready set');
    // Nothing dials the frozen worker (a health check is a dial through the runtime) while the
    // balancer's health interval runs several times; one sent would also turn it unhealthy.
    const { runtime } = services();
    const dial = runtime.connect!.bind(runtime);
    let dialled = 0;
    runtime.connect = (id, port, options) => {
      if (id === first.workerId) dialled++;
      return dial(id, port, options);
    };
    try {
      await afterTimersDue(HEALTH_TIMEOUT_MS * 3);
    } finally {
      runtime.connect = dial;
    }
    assert.equal(dialled, 0, 'no health check went to it while frozen');
    const lines = JSON.stringify(await systemLog.read(first.workerId));
    assert.match(lines, /health: suspended/);
    assert.doesNotMatch(lines, /unhealthy/);

    const starts = autoscaler.decisions.starts;
    const resumes = autoscaler.decisions.resumes;
    const again = await whoami(endpoint.id);
    assert.equal(again.workerId, first.workerId, 'the same worker answered');
    assert.equal(again.pid, first.pid, 'the same process');
    assert.equal(again.boot, first.boot, 'not restarted');
    assert.equal(autoscaler.decisions.starts, starts, 'no launch');
    assert.equal(autoscaler.decisions.resumes, resumes + 1);
    assert.notEqual(processState(first.pid), 'T');

    // strict to a suspended worker: upstream's "gone" for a scaled-down worker; it stays suspended
    await idleUntilSuspended(first);
    const strict = await fetch(lbUrl(endpoint.id), {
      headers: { ...auth(), 'x-runpod-worker-id': `strict ${first.workerId}` },
    });
    assert.equal(strict.status, 404);
    assert.equal(strict.headers.get('content-type'), 'application/problem+json');
    const problem = (await strict.json()) as { detail: string };
    assert.match(problem.detail, /^affinity_worker_gone: .*suspended.*strict-resume/);
    assert.equal(await status(first.workerId), 'suspended', 'strict does not resume it');
    assert.equal(processState(first.pid), 'T');

    // strict-resume: that worker, resumed for the request
    const pinned = await whoami(endpoint.id, `strict-resume ${first.workerId}`);
    assert.deepEqual([pinned.workerId, pinned.pid, pinned.boot], [first.workerId, first.pid, first.boot]);
    assert.equal(autoscaler.decisions.starts, starts, 'still no launch');
    assert.equal(autoscaler.decisions.resumes, resumes + 2);

    // the keep time: suspended, then removed with its process
    await idleUntilSuspended(first);
    clock.advance(KEEP_MS);
    await eventually(
      'the keep time to remove the suspended worker',
      async () => autoscaler.workerIds(endpoint.id).length === 0 && (await status(first.workerId)) === 'dead',
    );
    assert.equal(lb.has(first.workerId), false);
    await eventually('its process to be gone', async () => [null, 'Z'].includes(processState(first.pid)));
  });
});
