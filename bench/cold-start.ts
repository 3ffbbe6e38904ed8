// Cold start on a scaled-to-zero endpoint: the autoscaler, the process runtime and the Node worker.
//   node --import tsx bench/cold-start.ts [--rounds 5]
// Each round, alternately:
//   A. cold: POST /run to a fresh endpoint with no worker (workersMin 0); the `job:queued` event
//      wakes the autoscaler, which launches bench/support/cold-worker.ts through the process
//      runtime; measured from just before the POST to the worker's handler getting the job.
//   B. standalone: the same worker script spawned directly by this process (same command, cwd
//      and platform environment) for a job already queued on an endpoint without autoscaling;
//      measured from just before the spawn to its handler getting the job.
// Both end at the same event (the first take answered) and both include one take round trip,
// so platform overhead = A − B: the autoscaler's reaction, placement, the runtime's launch.
// Goal: median overhead <= 100 ms. Wall-clock times (Date.now) compared across processes. Rounds
// are spaced so that no worker of an earlier round is still running or exiting.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { printTable } from './support/processes.js';
import { freePort, startGantry, verdict } from './support/gantry.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const ROUNDS = Number(values.rounds);
const root = join(import.meta.dirname, '..');
const script = join(root, 'bench/support/cold-worker.ts');
const command = [process.execPath, '--import', 'tsx', script];
const IMAGE = 'bench-cold-worker:dev';
// What the process runtime passes on from the host's environment (src/runtime/process/instance-env.ts).
const hostEnv = Object.fromEntries(
  ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'].flatMap((k) =>
    process.env[k] === undefined ? [] : [[k, process.env[k]]],
  ),
);

interface Output {
  takenAt: number;
  processStartedAt: number;
}
interface View {
  status: string;
  delayTime?: number;
  output?: Output;
}

const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main() {
  const port = await freePort();
  const gantry = await startGantry({
    port,
    config: {
      images: { [IMAGE]: { command, cwd: root } },
      pods: { stopGraceMs: 2_000 },
    },
  });
  const standalone: ChildProcess[] = [];
  const rows: Array<Record<string, string | number>> = [];
  try {
    const waitDone = async (endpointId: string, id: string): Promise<View> => {
      const view = await gantry.api<View>('GET', `/v2/${endpointId}/status-sync/${id}?wait=60000`);
      if (view.status !== 'COMPLETED' || !view.output) throw new Error(`job ${id} ended ${JSON.stringify(view)}`);
      return view;
    };
    const attached = await gantry.createEndpoint({ imageName: IMAGE, workersMax: 0 });
    const cold: number[] = [];
    const alone: number[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      // B. the worker process on its own
      const { id: queued } = await gantry.api<{ id: string }>('POST', `/v2/${attached}/run`, { input: { round } });
      const env = workerEnvironment({
        publicUrl: gantry.url,
        endpointId: attached,
        workerId: `standalone-${round}`,
        apiKey: gantry.key,
      });
      const spawnAt = Date.now();
      const child = spawn(command[0]!, command.slice(1), { cwd: root, env: { ...hostEnv, ...env }, stdio: 'ignore' });
      standalone.push(child);
      const b = (await waitDone(attached, queued)).output!.takenAt - spawnAt;
      await new Promise((resolve) => (child.once('exit', resolve), child.kill('SIGTERM')));

      // A. through the autoscaler, on an endpoint scaled to zero
      const endpointId = await gantry.createEndpoint({ imageName: IMAGE, workersMax: 1, idleTimeout: 1 });
      const submitAt = Date.now();
      const { id } = await gantry.api<{ id: string }>('POST', `/v2/${endpointId}/run`, { input: { round } });
      const view = await waitDone(endpointId, id);
      const a = view.output!.takenAt - submitAt;
      // let the worker idle out and exit (idleTimeout 1 s) so that it does not compete with the next round
      await new Promise((r) => setTimeout(r, 3000));
      if (round === 0) continue; // warm-up: first tsx compile cache fill, first spawn
      cold.push(a);
      alone.push(b);
      rows.push({
        round,
        'cold: /run → first take (ms)': a,
        'standalone: spawn → first take (ms)': b,
        'overhead (ms)': a - b,
        'server delayTime (ms)': view.delayTime ?? '',
      });
    }
    const overhead = median(cold) - median(alone);
    rows.push({
      round: 'median',
      'cold: /run → first take (ms)': median(cold),
      'standalone: spawn → first take (ms)': median(alone),
      'overhead (ms)': overhead,
      'server delayTime (ms)': '',
    });
    console.log(
      `\nCold start, process runtime, Node worker (${ROUNDS} rounds after one warm-up; node ${process.version})\n`,
    );
    printTable(rows);
    const ok = overhead <= 100;
    console.log(
      `\nGoal: platform overhead (median cold − median standalone) <= 100 ms: ${verdict(ok)} (${overhead} ms)`,
    );
    if (!ok) process.exitCode = 1;
  } finally {
    for (const c of standalone) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await gantry.stop();
  }
}

await main();
