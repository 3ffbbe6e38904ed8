import { startGantry, loops, percentile } from './support/gantry.js';
import { workerEnvironment } from '../src/serverless/worker-env.js';
import { serve } from '../src/worker/index.js';
const g = await startGantry();
try {
  const endpointId = await g.createEndpoint();
  const W = Number(process.env.W ?? 4), C = Number(process.env.C ?? 64), CL = Number(process.env.CL ?? 128), N = Number(process.env.N ?? 4000);
  const takenAt = new Map<number, number>();
  const handles = Array.from({ length: W }, (_, w) => serve(async (job) => { takenAt.set((job.input as any).i, performance.now()); return { ok: 1 }; }, { env: workerEnvironment({ publicUrl: g.url, endpointId, workerId: `w${w}`, apiKey: g.key }), concurrency: C, handleSignals: false, shutdownGraceMs: 500, log: (m) => console.error('LOG', m) }));
  const base = `${g.url}/v2/${endpointId}`;
  const runMs: number[] = [], waitMs: number[] = [], dispatch: number[] = [];
  const s = await loops(N, CL, async (i) => {
    const t0 = performance.now();
    const run = await fetch(`${base}/run`, { method: 'POST', headers: g.headers, body: JSON.stringify({ input: { i } }) });
    const { id } = (await run.json()) as { id: string };
    const t1 = performance.now();
    const done = await fetch(`${base}/status-sync/${id}?wait=60000`, { headers: g.headers });
    await done.json();
    const t2 = performance.now();
    runMs.push(t1 - t0); waitMs.push(t2 - t1); dispatch.push((takenAt.get(i) ?? NaN) - t1);
  });
  const p = (a: number[]) => { a.sort((x, y) => x - y); return `p50 ${percentile(a, 50).toFixed(1)} p99 ${percentile(a, 99).toFixed(1)}`; };
  console.log(`rate ${(N / s).toFixed(0)}/s run ${p(runMs)} wait ${p(waitMs)} dispatch ${p(dispatch)}`);
  await Promise.all(handles.map((h) => h.stop()));
} finally { await g.stop(); }
