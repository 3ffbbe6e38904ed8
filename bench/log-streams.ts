// Log streams held open: RSS and CPU of a real server (`gantry serve`, its own process) with N idle
// SSE log streams from N real HTTP clients (one socket each), spread over running pods whose
// instances are real processes; then how long one new line takes to reach every stream.
//   node --import tsx bench/log-streams.ts [--streams 1000] [--pods 20]
// Goal (issue 11): 1,000 idle log streams cost little (RSS per stream, CPU while idle).
import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { ensureBuilt, printTable, startChild } from './support/processes.js';
import { benchFleet } from './support/bench-fleet.js';

const { values } = parseArgs({
  options: { streams: { type: 'string', default: '1000' }, pods: { type: 'string', default: '20' } },
});
const streams = Number(values.streams);
const podCount = Number(values.pods);
const root = join(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

ensureBuilt();
const dataDir = mkdtempSync(join(tmpdir(), 'gantry-bench-logs-'));
const configPath = join(dataDir, 'config.json');
// each pod prints a line, then one more whenever the file `more` appears in its folder
const printer =
  'echo started; while :; do if [ -e more ]; then rm more; echo "more $(date +%s%N)"; fi; sleep 0.05; done';
writeFileSync(
  configPath,
  JSON.stringify({
    fleet: benchFleet(8, ['NVIDIA GeForce RTX 4090']),
    quotas: { pods: 1e9, gpus: 1e9, logStreams: 1e9 },
    images: {
      'printer:1': { command: ['/bin/sh', '-c', printer] },
      // ~12 MB/s of 1 KB lines
      'chatty:1': {
        command: [
          process.execPath,
          '-e',
          'const line = "x".repeat(1023) + "\\n"; setInterval(() => { for (let i = 0; i < 64; i++) process.stdout.write(line); }, 5)',
        ],
      },
    },
    server: { maxConnectionsPerClient: streams + 256 },
  }),
);
const gantry = await startChild(
  [join(root, 'bin/gantry.js'), 'serve', '--port', '0', '--data-dir', dataDir, '--config', configPath],
  { GANTRY_LOG_LEVEL: 'warn' },
  /gantry listening on (\S+)/,
);
const open: IncomingMessage[] = [];
try {
  const key = spawnSync(
    process.execPath,
    [join(root, 'bin/gantry.js'), 'keys', 'create', '--account', 'admin', '--exempt', '--data-dir', dataDir],
    { encoding: 'utf8' },
  ).stdout.trim();
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const pods: string[] = [];
  for (let i = 0; i < podCount; i++) {
    const res = await fetch(`${gantry.url}/v2/pods`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: `logs-${i}`, image: 'printer:1', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 } }),
    });
    if (res.status !== 201) throw new Error(`creating a pod answered ${res.status}: ${await res.text()}`);
    pods.push(((await res.json()) as { id: string }).id);
  }
  for (const id of pods) {
    for (;;) {
      const pod = (await (await fetch(`${gantry.url}/v2/pods/${id}`, { headers })).json()) as { status: string };
      if (pod.status === 'RUNNING') break;
      await sleep(50);
    }
  }
  await sleep(2_000);
  const rssBefore = gantry.rssMb();
  const idleMs = 10_000;
  const cpuBase = gantry.cpuMs();
  await sleep(idleMs);
  const cpuNoStream = ((gantry.cpuMs() - cpuBase) / idleMs) * 100;

  // N clients, one socket each, reading and dropping what comes; each counts the new lines it saw.
  const url = new URL(gantry.url);
  const seen = new Array<number>(streams).fill(0);
  const openedAt = performance.now();
  await Promise.all(
    Array.from({ length: streams }, (_, i) => {
      const pod = pods[i % pods.length]!;
      return new Promise<void>((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            path: `/v2/pods/${pod}/logs?tail=0&source=container`,
            headers: { authorization: headers.authorization },
            agent: false,
          },
          (res) => {
            if (res.statusCode !== 200) return reject(new Error(`stream ${i} answered ${res.statusCode}`));
            open.push(res);
            res.on('data', (chunk: Buffer) => {
              if (chunk.includes('"more ')) seen[i]!++;
            });
            res.on('error', () => undefined);
            resolve();
          },
        );
        req.on('error', reject);
        req.end();
      });
    }),
  );
  const openSeconds = (performance.now() - openedAt) / 1000;
  await sleep(3_000);
  const rssOpen = gantry.rssMb();
  const cpuStart = gantry.cpuMs();
  await sleep(idleMs);
  const cpuIdle = ((gantry.cpuMs() - cpuStart) / idleMs) * 100;
  const rssIdle = gantry.rssMb();

  // one new line in every pod: how long until every stream has it
  const lineAt = performance.now();
  for (const id of pods) writeFileSync(join(dataDir, 'instances', id, 'more'), '');
  while (seen.some((n) => n < 1) && performance.now() - lineAt < 10_000) await sleep(10);
  const fanOutMs = performance.now() - lineAt;
  const reached = seen.filter((n) => n >= 1).length;

  for (const res of open.splice(0)) res.destroy();

  // slow clients: a pod printing ~12 MB/s, 10 clients that open its stream and never read
  const chatty = await fetch(`${gantry.url}/v2/pods`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'chatty', image: 'chatty:1', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 } }),
  });
  const chattyId = ((await chatty.json()) as { id: string }).id;
  await sleep(3_000);
  const peakOver = async (ms: number): Promise<number> => {
    let peak = 0;
    for (let waited = 0; waited < ms; waited += 500) {
      await sleep(500);
      peak = Math.max(peak, gantry.rssMb());
    }
    return peak;
  };
  const rssChattyBefore = gantry.rssMb();
  const chattyAlone = (await peakOver(10_000)) - rssChattyBefore;
  const rssSlowBefore = gantry.rssMb();
  const sockets = Array.from({ length: 10 }, () => {
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    socket.write(
      `GET /v2/pods/${chattyId}/logs?tail=0&source=container HTTP/1.1\r\nHost: x\r\nAuthorization: ${headers.authorization}\r\n\r\n`,
    );
    socket.pause();
    return socket;
  });
  const slowFirst = (await peakOver(10_000)) - rssSlowBefore;
  // bounded means it stops growing: the second 10 s add nothing
  const slowGrowth = (await peakOver(10_000)) - rssSlowBefore;
  for (const socket of sockets) socket.destroy();

  const perStreamKb = ((rssIdle - rssBefore) * 1024) / streams;
  console.log(
    `\nLog streams benchmark: ${streams} SSE streams over ${podCount} running pods (process runtime), opened in ${openSeconds.toFixed(1)} s\n`,
  );
  printTable([
    { measure: 'RSS, pods running, no stream', value: `${rssBefore.toFixed(0)} MB`, goal: '', verdict: '' },
    { measure: `RSS, ${streams} streams open`, value: `${rssOpen.toFixed(0)} MB`, goal: '', verdict: '' },
    {
      measure: `RSS, ${streams} streams after ${idleMs / 1000} s idle`,
      value: `${rssIdle.toFixed(0)} MB`,
      goal: '',
      verdict: '',
    },
    {
      measure: 'RSS per idle stream',
      value: `${perStreamKb.toFixed(1)} KB`,
      goal: '< 100 KB',
      verdict: perStreamKb < 100 ? 'PASS' : 'FAIL',
    },
    {
      measure: 'server CPU, pods running, no stream',
      value: `${cpuNoStream.toFixed(1)} % of a core`,
      goal: '',
      verdict: '',
    },
    {
      measure: `server CPU while ${streams} streams idle`,
      value: `${cpuIdle.toFixed(1)} % of a core`,
      goal: '< 10 %',
      verdict: cpuIdle < 10 ? 'PASS' : 'FAIL',
    },
    {
      measure: 'a pod printing ~12 MB/s, no stream: RSS growth over 10 s (peak)',
      value: `${chattyAlone.toFixed(1)} MB`,
      goal: '',
      verdict: '',
    },
    {
      measure: '+ 10 clients reading nothing: RSS growth (peak), first 10 s',
      value: `${slowFirst.toFixed(1)} MB`,
      goal: '',
      verdict: '',
    },
    {
      measure: '+ 10 clients reading nothing: RSS growth (peak), after 20 s',
      value: `${slowGrowth.toFixed(1)} MB`,
      goal: '≤ first 10 s + 5 MB',
      verdict: slowGrowth <= slowFirst + 5 ? 'PASS' : 'FAIL',
    },
    {
      measure: 'one new line in each pod → every stream has it',
      value: `${fanOutMs.toFixed(0)} ms (${reached}/${streams})`,
      goal: '< 1000 ms',
      verdict: reached === streams && fanOutMs < 1000 ? 'PASS' : 'FAIL',
    },
  ]);
} finally {
  for (const res of open) res.destroy();
  await gantry.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
