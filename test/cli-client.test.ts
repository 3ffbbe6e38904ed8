/**
 * The client commands (docs/cli.md) on resources, as a user runs them: the built CLI spawned
 * against a real `gantry serve` (test/support/cli-client.ts): pods reach RUNNING on the process
 * runtime, a job is computed by a real worker process.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KEY, json, ok, startCliServer, type CliServer } from './support/cli-client.js';

const GPU = 'NVIDIA GeForce RTX 4090';

let t: CliServer;
let dir: string;
const cli = (args: string[], env?: Record<string, string>, stdin?: string) => t.cli(args, env, stdin);

before(async () => {
  t = await startCliServer();
  ({ dir } = t);
});
after(() => t.close());

describe('pods', () => {
  let podId: string;

  test('pods create --wait shows the status changes on stderr and prints the RUNNING pod as JSON on stdout', async () => {
    const r = await cli([
      'pods',
      'create',
      '--name',
      'cli-pod',
      '--image',
      'ubuntu:22.04',
      '--gpu',
      GPU,
      '--ssh',
      '--wait',
      '--json',
    ]);
    ok(r, 'pods create --wait');
    const pod = json(r);
    assert.equal(pod.status, 'RUNNING');
    assert.equal(pod.name, 'cli-pod');
    podId = pod.id;
    assert.match(r.stderr, new RegExp(`^${podId}  PROVISIONING`, 'm'), 'the first status is shown');
    assert.match(r.stderr, new RegExp(`^${podId}  RUNNING`, 'm'), 'the last status is shown');
    assert.match(r.stderr, /placed on host .*pulling \(if needed\) and starting image ubuntu:22\.04/);
  });

  test('pods list prints an aligned table for people and the same pods as JSON for scripts', async () => {
    const table = await cli(['pods', 'list']);
    ok(table, 'pods list');
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+STATUS\s+MACHINE\s+\$\/HR\s+IMAGE\s+AGE$/);
    const row = lines.find((l) => l.startsWith(podId));
    assert.ok(row, table.stdout);
    assert.equal(row.indexOf('cli-pod'), lines[0]!.indexOf('NAME'), 'columns line up under their headers');
    assert.equal(row.indexOf('RUNNING'), lines[0]!.indexOf('STATUS'));

    const scripted = await cli(['pods', 'list', '--json']);
    ok(scripted, 'pods list --json');
    const pods = json(scripted);
    assert.ok(Array.isArray(pods));
    assert.deepEqual(
      pods.map((p: any) => [p.id, p.status]),
      [[podId, 'RUNNING']],
    );
    assert.equal(scripted.stderr, '', 'nothing but the JSON is written');
  });

  test('pods logs prints the pod’s kept lines and ends without --follow', async () => {
    const r = await cli(['pods', 'logs', podId]);
    ok(r, 'pods logs');
    assert.match(r.stdout, /^\[gantry\] placed on host /m);
    const records = await cli(['pods', 'logs', podId, '--source', 'system', '--json']);
    ok(records, 'pods logs --json');
    const lines = records.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.ok(lines.length >= 1);
    for (const l of lines) assert.deepEqual(Object.keys(l).sort(), ['line', 'source', 'ts']);
  });

  test('pods ssh runs the system ssh with the pod’s proxy endpoint, never handing it the API key', async () => {
    const printed = await cli(['pods', 'ssh', podId, '--print']);
    ok(printed, 'pods ssh --print');
    const pod = json(await cli(['pods', 'get', podId, '--json']));
    assert.equal(printed.stdout.trim(), pod.ssh.proxy.command);

    // A stand-in `ssh` first on PATH records what it was given and exits 7.
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    const record = join(dir, 'ssh-record');
    writeFileSync(join(bin, 'ssh'), `#!/bin/sh\nprintf '%s\\n' "$@" > ${record}.args\nenv > ${record}.env\nexit 7\n`);
    chmodSync(join(bin, 'ssh'), 0o755);
    const r = await cli(['pods', 'ssh', podId, '--api-key', KEY, '--', '-o', 'BatchMode=yes'], {
      PATH: `${bin}:${process.env.PATH}`,
    });
    assert.equal(r.status, 7, `ssh's exit status is the command's: ${r.stderr}`);
    const args = readFileSync(`${record}.args`, 'utf8').trim().split('\n');
    const { host, port, username } = pod.ssh.proxy;
    assert.deepEqual(args, ['-p', String(port), '-o', 'BatchMode=yes', `${username}@${host}`]);
    assert.ok(!readFileSync(`${record}.env`, 'utf8').includes(KEY), 'ssh’s environment holds no API key');
  });

  test('pods stop, start --wait and rm change the pod as the API says, in tables and JSON', async () => {
    const stopped = await cli(['pods', 'stop', podId]);
    ok(stopped, 'pods stop');
    assert.match(stopped.stdout, new RegExp(`^${podId}\\s+cli-pod\\s+EXITED`, 'm'));
    const started = await cli(['pods', 'start', podId, '--wait', '--json']);
    ok(started, 'pods start --wait');
    assert.equal(json(started).status, 'RUNNING');
    const removed = await cli(['pods', 'rm', podId, '--json']);
    ok(removed, 'pods rm');
    assert.deepEqual(json(removed), { id: podId, terminated: true });
    assert.deepEqual(json(await cli(['pods', 'list', '--json'])), [], 'a terminated pod is not listed');
    assert.equal(json(await cli(['pods', 'list', '--all', '--json']))[0].status, 'TERMINATED');
  });
});

describe('templates, volumes, endpoints and jobs', () => {
  let templateId: string;
  let endpointId: string;

  test('templates and volumes are created, listed, read and removed', async () => {
    const t = await cli([
      'templates',
      'create',
      '--name',
      'cli-echo',
      '--image',
      'cli-echo:dev',
      '--serverless',
      '--json',
    ]);
    ok(t, 'templates create');
    templateId = json(t).id;
    assert.match(
      (await cli(['templates', 'list'])).stdout,
      new RegExp(`^${templateId}\\s+cli-echo\\s+cli-echo:dev\\s+serverless`, 'm'),
    );
    assert.equal(json(await cli(['templates', 'get', templateId, '--json'])).image, 'cli-echo:dev');

    const v = await cli([
      'volumes',
      'create',
      '--name',
      'models',
      '--size',
      '10',
      '--data-center',
      'US-TX-3',
      '--json',
    ]);
    ok(v, 'volumes create');
    const volume = json(v);
    assert.deepEqual([volume.name, volume.size, volume.dataCenter], ['models', 10, 'US-TX-3']);
    assert.match(
      (await cli(['volumes', 'list'])).stdout,
      new RegExp(`^${volume.id}\\s+models\\s+10 GB\\s+US-TX-3`, 'm'),
    );
    assert.equal((await cli(['volumes', 'get', volume.id, '--json'])).status, 0);
    ok(await cli(['volumes', 'rm', volume.id]), 'volumes rm');
    assert.equal((await cli(['volumes', 'get', volume.id])).status, 3);
  });

  test('jobs run --sync prints the output a real worker computed', async () => {
    const e = await cli([
      'endpoints',
      'create',
      '--name',
      'cli-echo',
      '--template',
      templateId,
      '--gpu-pool',
      'ADA_24',
      '--workers-max',
      '1',
      '--json',
    ]);
    ok(e, 'endpoints create');
    endpointId = json(e).id;
    assert.match(
      (await cli(['endpoints', 'list'])).stdout,
      new RegExp(`^${endpointId}\\s+cli-echo\\s+QUEUE\\s+0-1\\s+ADA_24`, 'm'),
    );

    const r = await cli(['jobs', 'run', endpointId, '--input', '{"hello":"world"}', '--sync']);
    ok(r, 'jobs run --sync');
    assert.deepEqual(JSON.parse(r.stdout).echo, { hello: 'world' }, 'stdout is the output');
  });

  test('jobs run queues input from a file or stdin and prints the id; jobs status --wait reads the result', async () => {
    writeFileSync(join(dir, 'input.json'), '{"from":"file"}');
    const queued = await cli(['jobs', 'run', endpointId, '--input', `@${join(dir, 'input.json')}`]);
    ok(queued, 'jobs run');
    const id = queued.stdout.trim();
    const done = await cli(['jobs', 'status', endpointId, id, '--wait', '--json']);
    ok(done, 'jobs status --wait');
    assert.equal(json(done).status, 'COMPLETED');
    assert.deepEqual(json(done).output.echo, { from: 'file' });

    const piped = await cli(['jobs', 'run', endpointId, '--sync', '--json'], {}, '{"from":"stdin"}');
    ok(piped, 'jobs run from stdin');
    assert.deepEqual(json(piped).output.echo, { from: 'stdin' });
  });

  test('a job nothing takes exits 5 once --timeout passes, with the job on stdout', async () => {
    const e = await cli([
      'endpoints',
      'create',
      '--name',
      'idle',
      '--template',
      templateId,
      '--gpu-pool',
      'ADA_24',
      '--workers-max',
      '0',
      '--json',
    ]);
    ok(e, 'endpoints create');
    const idle = json(e).id;
    const r = await cli(['jobs', 'run', idle, '--input', '{}', '--sync', '--timeout', '1s', '--json']);
    assert.equal(r.status, 5, r.stderr);
    assert.equal(json(r).status, 'IN_QUEUE');
    assert.match(r.stderr, /is still IN_QUEUE/);
    const cancelled = await cli(['jobs', 'cancel', idle, json(r).id, '--json']);
    ok(cancelled, 'jobs cancel');
    assert.equal(json(cancelled).status, 'CANCELLED');
    ok(await cli(['endpoints', 'delete', idle]), 'endpoints delete');
    assert.equal((await cli(['endpoints', 'get', idle])).status, 3);
  });

  test("a load-balancing endpoint's get names the address its requests go to, not the queue's run URLs", async () => {
    const e = await cli([
      'endpoints',
      'create',
      '--name',
      'balanced',
      '--template',
      templateId,
      '--gpu-pool',
      'ADA_24',
      '--type',
      'LOAD_BALANCER',
      '--workers-max',
      '0',
      '--json',
    ]);
    ok(e, 'endpoints create --type LOAD_BALANCER');
    const id = json(e).id as string;
    const shown = await cli(['endpoints', 'get', id]);
    ok(shown, 'endpoints get');
    assert.match(shown.stdout, new RegExp(`requests: +http://\\S+/lb/${id}/\\{any path\\}`));
    assert.doesNotMatch(shown.stdout, /runsync:/);
    ok(await cli(['endpoints', 'delete', id]), 'endpoints delete');
  });
});
