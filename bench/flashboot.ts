// FlashBoot on Docker: the first job's result for an endpoint at zero running workers, resumed
// from suspended vs started fresh, next to the raw Engine API in the same run.
//   node --import tsx bench/flashboot.ts [--rounds 20] [--slow-rounds 5] [--slow-start-ms 2000]
// Each round (the first is a warm-up, not counted), in this order:
//   A. raw Engine API: a job is queued on an endpoint without autoscaling; the worker image is
//      created and started through the Engine API (host network, the worker environment); from
//      the create call to its handler taking the job. Then the same container is paused and the
//      unpause call timed (what resuming costs the engine itself).
//   B. fresh: runsync on an endpoint without FlashBoot whose worker idled out and whose container
//      is gone; submit → result, split by the engine's own events (create, start), the worker's
//      process start and its first take.
//   C. resumed: runsync on a FlashBoot endpoint whose only worker idled out and is suspended (its
//      container paused, `/health` workers.suspended 1); submit → result.
// Then --slow-rounds rounds of B and C with a worker that waits --slow-start-ms before it asks for
// work (a model load's stand-in): what the suspended path saves a worker with a slow start.
// Goals (issue 30): resumed p50 <= 100 ms and <= 0.2 x the fresh p50; fresh submit → take <= 100 ms
// over the raw Engine API's create → take. Wall clocks across processes on one machine; the
// engine's event times are its own clock, the same machine's. Skips (exit 0) without an engine.
// With --python-sdk DIR (a directory `import runpod.serverless` works from: see
// bench/support/python-sdk-image.ts), --python-rounds rounds of B and C with a worker on the real
// Python worker SDK (this machine's interpreter in the image): what the suspended path saves it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DockerClient } from '../src/runtime/docker/docker-client.js';
import { LABEL } from '../src/runtime/docker/docker-names.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { removeNamespace } from '../test/support/docker.js';
import { buildWorkerImage, standInNvidiaSmi, type WorkerTimes } from './support/docker-bench.js';
import { buildPythonSdkImage, pythonSdkProblem } from './support/python-sdk-image.js';
import { freePort, percentile, startGantry, verdict, type Gantry } from './support/gantry.js';
import { ensureBuilt, printTable } from './support/processes.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    'slow-rounds': { type: 'string', default: '5' },
    'slow-start-ms': { type: 'string', default: '2000' },
    'python-sdk': { type: 'string' },
    'python-rounds': { type: 'string', default: '5' },
  },
});
const ROUNDS = Number(values.rounds);
const SLOW_ROUNDS = Number(values['slow-rounds']);
const SLOW_START_MS = Number(values['slow-start-ms']);
const PYTHON_SDK = values['python-sdk'];
const PYTHON_ROUNDS = Number(values['python-rounds']);
const DOCKER_HOST = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sorted = (a: readonly number[]) => [...a].sort((x, y) => x - y);
const p50 = (a: readonly number[]) => percentile(sorted(a), 50);
const p90 = (a: readonly number[]) => percentile(sorted(a), 90);
const ms = (n: number) => Math.round(n * 10) / 10;

interface JobView {
  status: string;
  output?: WorkerTimes;
}
interface Health {
  workers: { idle: number; running: number; suspended?: number };
}

/** The engine's create/start events of the namespace's worker containers, as they come. */
class EngineTimes {
  readonly events: Array<{ action: string; endpoint: string; at: number }> = [];
  readonly #abort = new AbortController();
  async follow(client: DockerClient, namespace: string): Promise<void> {
    const stream = await client.events(
      {
        filters: {
          type: ['container'],
          event: ['create', 'start'],
          label: [`${LABEL.namespace}=${namespace}`, `${LABEL.kind}=worker`],
        },
      },
      this.#abort.signal,
    );
    void (async () => {
      try {
        for await (const e of stream)
          this.events.push({
            action: e.Action,
            endpoint: e.Actor.Attributes?.[LABEL.endpoint] ?? '',
            at: e.timeNano / 1e6,
          });
      } catch {
        // ended by close()
      }
    })();
  }
  /** When the engine first did `action` for the endpoint's worker at or after `since`. */
  first(action: string, endpoint: string, since: number): number | null {
    return this.events.find((e) => e.action === action && e.endpoint === endpoint && e.at >= since)?.at ?? null;
  }
  close(): void {
    this.#abort.abort();
  }
}

async function main() {
  const client = new DockerClient({ dockerHost: DOCKER_HOST, timeoutMs: 120_000 });
  try {
    await client.ping(1_000);
  } catch (err) {
    client.close();
    console.log(`bench/flashboot.ts skipped: no Docker Engine answers at ${DOCKER_HOST} (${(err as Error).message})`);
    return;
  }
  if (PYTHON_SDK) {
    const problem = pythonSdkProblem(PYTHON_SDK);
    if (problem) throw new Error(`--python-sdk ${PYTHON_SDK}: ${problem}`);
  }
  ensureBuilt();
  const scratch = mkdtempSync(join(tmpdir(), 'gantry-bench-flashboot-'));
  const namespace = `f${process.pid.toString(36)}${randomBytes(3).toString('hex')}`;
  const engineTimes = new EngineTimes();
  let gantry: Gantry | null = null;
  try {
    const worker = await buildWorkerImage(client, scratch);
    const base = 30000 + Math.floor(Math.random() * 80) * 100;
    gantry = await startGantry({
      port: await freePort(),
      config: {
        runtime: {
          kind: 'docker',
          docker: {
            namespace,
            bindIp: '127.0.0.1',
            publicIp: '127.0.0.1',
            portRange: [base, base + 99],
            nvidiaSmi: standInNvidiaSmi(scratch, 8),
            gpuMode: 'env-only',
            firewall: { mode: 'off' },
          },
        },
        pods: { stopGraceMs: 2_000 },
        serverless: { flashboot: { maxKeepMs: 600_000 } },
      },
      env: { DOCKER_HOST },
    });
    const g = gantry;
    await engineTimes.follow(client, namespace);

    const endpointFor = async (flashboot: boolean, startDelayMs: number, image: string): Promise<string> => {
      const template = await g.api<{ id: string }>('POST', '/v2/templates', {
        name: `flash-${flashboot}-${startDelayMs}-${Date.now()}`,
        image,
        serverless: true,
        disk: 5,
        env: { START_DELAY_MS: String(startDelayMs) },
      });
      const endpoint = await g.api<{ id: string }>('POST', '/v2/serverless', {
        name: `flash-${flashboot ? 'on' : 'off'}-${startDelayMs}`,
        templateId: template.id,
        type: 'QUEUE',
        gpu: { pools: ['ADA_24'] },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        workers: { min: 0, max: 1, idleTimeout: 1 },
        flashboot: flashboot ? 'FLASHBOOT' : 'OFF',
      });
      return endpoint.id;
    };
    const runsync = async (endpointId: string, round: number) => {
      const submitAt = Date.now();
      const done = await g.api<JobView>('POST', `/v2/${endpointId}/runsync?wait=60000`, { input: { round } });
      const resultAt = Date.now();
      if (done.status !== 'COMPLETED' || !done.output) throw new Error(`job ended ${JSON.stringify(done)}`);
      return { submitAt, resultAt, output: done.output };
    };
    const until = async (what: string, check: () => Promise<boolean>) => {
      const deadline = Date.now() + 60_000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`${what}: not within 60 s`);
        await sleep(50);
      }
    };
    const noContainers = (endpointId: string) =>
      until(`the workers of ${endpointId} to go`, async () => {
        const left = await client.listContainers({
          all: true,
          filters: { label: [`${LABEL.namespace}=${namespace}`, `${LABEL.endpoint}=${endpointId}`] },
        });
        return left.length === 0;
      });
    const suspended = (endpointId: string) =>
      until(`the worker of ${endpointId} to be suspended`, async () => {
        const h = await g.api<Health>('GET', `/v2/${endpointId}/health`);
        return h.workers.suspended === 1 && h.workers.idle === 0 && h.workers.running === 0;
      });

    // A. the raw Engine API
    const attached = await g.createEndpoint({ imageName: worker, workersMax: 0 });
    let peerSeq = 0;
    const raw = async (round: number) => {
      const { id: queued } = await g.api<{ id: string }>('POST', `/v2/${attached}/run`, { input: { round } });
      const env = workerEnvironment({
        publicUrl: g.url,
        endpointId: attached,
        workerId: `raw-${round}`,
        apiKey: g.key,
      });
      const createAt = Date.now();
      const { Id } = await client.createContainer(`${namespace}-raw-${peerSeq++}`, {
        Image: worker,
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        Labels: { [LABEL.namespace]: namespace, 'gantry.bench': 'peer' },
        HostConfig: { RestartPolicy: { Name: 'no' }, NetworkMode: 'host' },
        Tty: false,
        OpenStdin: false,
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
      });
      const createdAt = Date.now();
      await client.startContainer(Id);
      const startedAt = Date.now();
      const done = await g.api<JobView>('GET', `/v2/${attached}/status-sync/${queued}?wait=60000`);
      if (done.status !== 'COMPLETED' || !done.output) throw new Error(`raw job ended ${JSON.stringify(done)}`);
      await client.pauseContainer(Id);
      const unpauseAt = Date.now();
      await client.unpauseContainer(Id);
      const unpausedAt = Date.now();
      await client.removeContainer(Id, { force: true });
      return {
        create: createdAt - createAt,
        start: startedAt - createdAt,
        take: done.output.takenAt - createAt,
        unpause: unpausedAt - unpauseAt,
      };
    };
    const fresh = async (endpointId: string, round: number) => {
      await noContainers(endpointId);
      const r = await runsync(endpointId, round);
      const created = engineTimes.first('create', endpointId, r.submitAt);
      const started = engineTimes.first('start', endpointId, r.submitAt);
      return {
        result: r.resultAt - r.submitAt,
        created: created === null ? NaN : created - r.submitAt,
        started: started === null ? NaN : started - r.submitAt,
        process: r.output.processStartedAt - r.submitAt,
        take: r.output.takenAt - r.submitAt,
      };
    };
    const resumed = async (endpointId: string, round: number) => {
      await suspended(endpointId);
      const r = await runsync(endpointId, round);
      return { result: r.resultAt - r.submitAt, take: r.output.takenAt - r.submitAt };
    };

    const series = async (label: string, rounds: number, startDelayMs: number, withRaw: boolean, image = worker) => {
      const off = await endpointFor(false, startDelayMs, image);
      const on = await endpointFor(true, startDelayMs, image);
      await runsync(on, -1); // its first worker, which then idles out and is suspended
      const rows: Array<Record<string, string | number>> = [];
      const f: Array<Awaited<ReturnType<typeof fresh>>> = [];
      const s: Array<Awaited<ReturnType<typeof resumed>>> = [];
      const a: Array<Awaited<ReturnType<typeof raw>>> = [];
      for (let round = 0; round <= rounds; round++) {
        const rawRound = withRaw ? await raw(round) : null;
        const freshRound = await fresh(off, round);
        const resumedRound = await resumed(on, round);
        if (round === 0) continue;
        if (rawRound) a.push(rawRound);
        f.push(freshRound);
        s.push(resumedRound);
        rows.push({
          round,
          ...(rawRound ? { 'raw create→take': rawRound.take, 'raw unpause': rawRound.unpause } : {}),
          'fresh: created': ms(freshRound.created),
          started: ms(freshRound.started),
          'process start': freshRound.process,
          take: freshRound.take,
          result: freshRound.result,
          'resumed: take': resumedRound.take,
          'resumed: result': resumedRound.result,
        });
      }
      const stat = (name: string, values: number[]) => ({ name, p50: ms(p50(values)), p90: ms(p90(values)) });
      console.log(`\n${label} (${rounds} rounds after a warm-up; ms after submit unless said)\n`);
      printTable(rows);
      const summary = [
        ...(withRaw
          ? [
              stat(
                'raw Engine API: create call',
                a.map((x) => x.create),
              ),
              stat(
                'raw Engine API: start call',
                a.map((x) => x.start),
              ),
              stat(
                'raw Engine API: create → take',
                a.map((x) => x.take),
              ),
              stat(
                'raw Engine API: unpause call',
                a.map((x) => x.unpause),
              ),
            ]
          : []),
        stat(
          'fresh: container created (engine event)',
          f.map((x) => x.created),
        ),
        stat(
          'fresh: container started (engine event)',
          f.map((x) => x.started),
        ),
        stat(
          'fresh: worker process started',
          f.map((x) => x.process),
        ),
        stat(
          'fresh: first take',
          f.map((x) => x.take),
        ),
        stat(
          'fresh: result',
          f.map((x) => x.result),
        ),
        stat(
          'resumed: take',
          s.map((x) => x.take),
        ),
        stat(
          'resumed: result',
          s.map((x) => x.result),
        ),
      ];
      printTable(summary);
      return { fresh: f, resumed: s, raw: a };
    };

    const plain = await series('Trivial Node worker', ROUNDS, 0, true);
    const slow = await series(
      `Worker that waits ${SLOW_START_MS} ms before it asks for work`,
      SLOW_ROUNDS,
      SLOW_START_MS,
      false,
    );
    const python = PYTHON_SDK
      ? await series(
          'Worker on the Python worker SDK (runpod-python)',
          PYTHON_ROUNDS,
          0,
          false,
          await buildPythonSdkImage(client, PYTHON_SDK, scratch),
        )
      : null;

    const resumedP50 = p50(plain.resumed.map((x) => x.result));
    const freshP50 = p50(plain.fresh.map((x) => x.result));
    const overhead = p50(plain.fresh.map((x) => x.take)) - p50(plain.raw.map((x) => x.take));
    console.log('\nFigures\n');
    printTable([
      {
        figure: 'resumed: result p50',
        measured: `${ms(resumedP50)} ms`,
        goal: '<= 100 ms',
        verdict: verdict(resumedP50 <= 100),
      },
      {
        figure: 'resumed / fresh (result p50)',
        measured: (resumedP50 / freshP50).toFixed(3),
        goal: '<= 0.2',
        verdict: verdict(resumedP50 <= 0.2 * freshP50),
      },
      {
        figure: 'fresh take p50 − raw create → take p50',
        measured: `${ms(overhead)} ms`,
        goal: '<= 100 ms',
        verdict: verdict(overhead <= 100),
      },
      {
        figure: `slow start (${SLOW_START_MS} ms): resumed / fresh (result p50)`,
        measured: (p50(slow.resumed.map((x) => x.result)) / p50(slow.fresh.map((x) => x.result))).toFixed(3),
        goal: '(shown)',
        verdict: '',
      },
      ...(python
        ? [
            {
              figure: 'Python SDK worker: resumed / fresh (result p50)',
              measured: `${ms(p50(python.resumed.map((x) => x.result)))} / ${ms(p50(python.fresh.map((x) => x.result)))} ms = ${(
                p50(python.resumed.map((x) => x.result)) / p50(python.fresh.map((x) => x.result))
              ).toFixed(3)}`,
              goal: '(shown)',
              verdict: '',
            },
          ]
        : []),
    ]);
  } finally {
    engineTimes.close();
    await gantry?.stop();
    await removeNamespace(client, namespace).catch(() => {});
    client.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
