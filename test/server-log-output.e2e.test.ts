// `gantry serve` at the default level writes one line per request, a batch at a time
// (src/logs/coalesced-output.ts): none may be lost or held back indefinitely.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './support/eventually.js';
import { spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';

const completed = (out: string) => out.split('\n').filter((l) => l.includes('"msg":"request completed"')).length;

describe('the server log at info', () => {
  let server: SpawnedGantry | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'gantry-log-output-'));
  after(async () => {
    await server?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('every request line reaches stdout while the server runs, and the last ones before it exits', async () => {
    server = await spawnGantry(['--data-dir', dir], { GANTRY_LOG_LEVEL: 'info' });
    for (let i = 0; i < 40; i++) assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    // held at most 100 ms, then written without any further request or exit
    await until('the 40 request lines are on stdout', () => completed(server!.output()) === 40);
    for (let i = 0; i < 5; i++) assert.equal((await fetch(`${server.url}/v2/pods`)).status, 401);
    assert.equal(await server.stop('SIGTERM'), 0);
    const out = server.output();
    assert.equal(completed(out), 45, 'the five lines written just before SIGTERM are not lost');
    for (const l of out.split('\n').filter((x) => x.startsWith('{'))) JSON.parse(l); // whole lines, never cut
  });
});
