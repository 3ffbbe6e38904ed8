import { startGantry, percentile } from './support/gantry.js';
const g = await startGantry();
try {
  const ep = await g.createEndpoint();
  const base = `${g.url}/v2/${ep}`;
  const lat = async (label: string, f: () => Promise<Response>) => {
    const a: number[] = [];
    for (let i = 0; i < 1000; i++) { const t = performance.now(); const r = await f(); await r.arrayBuffer(); a.push(performance.now() - t); }
    a.sort((x, y) => x - y);
    console.log(label, percentile(a, 50).toFixed(2), percentile(a, 99).toFixed(2));
  };
  let id = '';
  await lat('run', async () => { const r = await fetch(`${base}/run`, { method: 'POST', headers: g.headers, body: '{"input":{"a":1}}' }); return r; });
  const r = await fetch(`${base}/run`, { method: 'POST', headers: g.headers, body: '{"input":{"a":1}}' }); id = ((await r.json()) as any).id;
  await lat('status', () => fetch(`${base}/status/${id}`, { headers: g.headers }));
  await lat('health', () => fetch(`${base}/health`, { headers: g.headers }));
  await lat('take', () => fetch(`${base}/job-take/wx`, { headers: g.headers }));
  await lat('run', async () => { const r = await fetch(`${base}/run`, { method: 'POST', headers: g.headers, body: '{"input":{"a":1}}' }); return r; });
} finally { await g.stop(); }
