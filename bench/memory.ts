// Server memory with many pods stored: creates N pods through the API, then reads the server's RSS.
//   node --import tsx bench/memory.ts [--pods 10000]
// Goal (issue 2): RSS with 10,000 pods stored < 300 MB.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { ensureBuilt, printTable, startChild } from './support/processes.js';
import { benchFleet } from './support/bench-fleet.js';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '10000' } } });
const total = Number(values.pods);
const root = join(import.meta.dirname, '..');

ensureBuilt();
const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-mem-'));
const configPath = join(dataDir, 'config.json');
// one account creates every pod: its pod and GPU quotas are far above the run's
writeFileSync(configPath, JSON.stringify({ fleet: benchFleet(3000), quotas: { pods: 1e9, gpus: 1e9 } }));
const gantry = await startChild(
  [join(root, 'bin/gantry.js'), 'serve', '--port', '0', '--data-dir', dataDir, '--config', configPath],
  { GANTRY_LOG_LEVEL: 'warn' },
  /gantry listening on (\S+)/,
);
try {
  const key = spawnSync(
    process.execPath,
    [join(root, 'bin/gantry.js'), 'keys', 'create', '--account', 'admin', '--exempt', '--data-dir', dataDir],
    { encoding: 'utf8' },
  ).stdout.trim();
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const rssEmpty = gantry.rssMb();
  const started = performance.now();
  let next = 0;
  let failures = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const body = JSON.stringify({
        name: `pod-${i}`,
        image: 'ubuntu:22.04',
        gpu: {
          id: ['NVIDIA GeForce RTX 4090', 'NVIDIA RTX A5000', 'NVIDIA A100 80GB PCIe', 'NVIDIA L40S'][i % 4],
          count: 1,
        },
        ports: ['8888/http', '22/tcp'],
        env: { INDEX: String(i), MODEL: 'llama-3-8b' },
      });
      const res = await fetch(`${gantry.url}/v2/pods`, { method: 'POST', headers, body });
      if (res.status !== 201) failures++;
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const seconds = (performance.now() - started) / 1000;
  await new Promise((r) => setTimeout(r, 3000)); // let the controller settle every pod
  const list = await fetch(`${gantry.url}/v2/pods`, { headers });
  const listed = ((await list.json()) as { pods: unknown[] }).pods.length;
  (globalThis as { gc?: () => void }).gc?.();
  const rss = gantry.rssMb();
  console.log(
    `\nMemory benchmark: ${total} pods created in ${seconds.toFixed(1)} s (${(total / seconds).toFixed(0)}/s), ${failures} failed, ${listed} listed\n`,
  );
  printTable([
    { measure: 'RSS, empty server', MB: rssEmpty.toFixed(0), goal: '', verdict: '' },
    {
      measure: `RSS, ${total} pods stored`,
      MB: rss.toFixed(0),
      goal: '< 300',
      verdict: rss < 300 && failures === 0 ? 'PASS' : 'FAIL',
    },
  ]);
} finally {
  await gantry.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
