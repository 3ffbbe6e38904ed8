// Operation latency through the fleet, vs the in-process Docker runtime on the same engine:
//   DOCKER_HOST=… node --import tsx bench/fleet-ops.ts [--rounds 20]
// Goal (issue 10): a pod's create → RUNNING through control plane → agent → container started
// adds ≤ 20 ms at p50 to the same create on `runtime: docker`.
// Two compiled servers, each its own process, on the one engine at DOCKER_HOST (images built
// locally, nothing pulled):
//   - fleet: `gantry serve` with `runtime: fleet` (SQLite, the fleet's default timings) and a real
//     `gantry agent` process joined with a `gantry hosts token create` token, driving the engine;
//   - docker (the peer): `gantry serve` with `runtime: docker` over the same engine.
// Both hosts are CPU-only (no nvidia-smi here) and publish pods' ports on 0.0.0.0 (the agent's
// runtime always does). Each round creates one pod on each (cpu3c, 2 vCPUs, the http image,
// 8000/http) over HTTP, alternating which goes first, waits for RUNNING (polling every POLL_MS,
// default 100), terminates it and waits for its container to be gone. RUNNING is when the server
// recorded it: the pod's `startedAt` (the server's clock, the same machine's), read the same way
// for both, as bench/docker.ts does. The added latency is the median of each round's difference
// (fleet − docker); round 0 warms up and is not counted. The engine's own create → start (~0.5 s
// on 2 cores, ± tens of ms) is in both totals and is most of that figure's noise: a second line
// gives the control plane's steps alone (POST → container created, started → RUNNING written).
// Where the time goes, per side, from clocks of one machine: the POST's answer; the operation
// enqueued (fleet: `host_operations.created_at`, read from the server's SQLite after the run); the
// container created and started (the engine's `Created` and `State.StartedAt`); the agent's
// `operation applied` log line; the operation acknowledged (`acked_at`); RUNNING written.
// Everything it made (servers, agent, containers in both namespaces) goes at exit, on SIGINT too.
// Skips (exit 0) when no engine answers at DOCKER_HOST.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { DockerClient } from '../src/runtime/docker/docker-client.js';
import { LABEL } from '../src/runtime/docker/docker-names.js';
import { buildImage, RECIPES } from '../test/support/docker-images.js';
import { removeNamespace } from '../test/support/docker.js';
import { gantryBin, percentile, startGantry, verdict, type Gantry } from './support/gantry.js';
import { httpClient, type HttpClient } from './support/http-client.js';
import { ensureBuilt, printTable } from './support/processes.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '20' } } });
const ROUNDS = Number(values.rounds);
const POLL_MS = Number(process.env.POLL_MS ?? 100);
const GOAL_MS = 20;
const DOCKER_HOST = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (n: number) => Math.round(n * 10) / 10;
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
/** An engine time (RFC 3339, nanoseconds) as epoch ms with its sub-ms part. */
const engineMs = (t: string): number => {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(t);
  if (!m) return NaN;
  return Date.parse(`${m[1]}${m[3]}`) + Number(`0${m[2] ?? '.0'}`) * 1000;
};

interface PodView {
  id: string;
  status?: string;
  desiredStatus?: string;
  startedAt?: string | null;
}

/** One pod's way to RUNNING, epoch ms (NaN where a side has no such step). */
interface Trip {
  id: string;
  posted: number;
  answered: number;
  seen: number;
  created: number;
  started: number;
  running: number;
}

interface Side {
  name: 'fleet' | 'docker';
  server: Gantry;
  api: HttpClient;
  namespace: string;
}

async function main() {
  const client = new DockerClient({ dockerHost: DOCKER_HOST, timeoutMs: 120_000 });
  try {
    await client.ping(1_000);
  } catch (err) {
    client.close();
    console.log(
      `bench/fleet-ops.ts skipped: no Docker Engine answers at ${DOCKER_HOST} (${(err as Error).message}); set DOCKER_HOST to run it`,
    );
    return;
  }
  ensureBuilt();
  const scratch = mkdtempSync(join(tmpdir(), 'gantry-bench-fleet-ops-'));
  const tag = `${process.pid.toString(36)}${randomBytes(3).toString('hex')}`;
  const namespaces = { fleet: `bf${tag}`, docker: `bd${tag}` };
  const servers: Gantry[] = [];
  const clients: HttpClient[] = [];
  let agent: ChildProcess | null = null;
  let agentOut = '';

  let cleaned: Promise<void> | null = null;
  const cleanup = () =>
    (cleaned ??= (async () => {
      for (const c of clients) c.close();
      if (agent && agent.exitCode === null && agent.signalCode === null) {
        const a = agent;
        await new Promise<void>((resolve) => {
          a.once('exit', () => resolve());
          a.kill('SIGTERM');
          setTimeout(() => a.kill('SIGKILL'), 15_000).unref();
        });
      }
      for (const s of servers) await s.stop().catch(() => undefined);
      // the agent leaves its containers running when it stops (as it should): they go here
      for (const ns of Object.values(namespaces))
        await removeNamespace(client, ns).catch((err) =>
          console.error(`could not remove namespace ${ns}: ${(err as Error).message}`),
        );
      client.close();
      rmSync(scratch, { recursive: true, force: true });
    })());
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: removing what the bench made…`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const image = await buildImage(client, RECIPES.http);
    const base = 30000 + Math.floor(Math.random() * 80) * 100;
    const portsOf = { fleet: [base, base + 499] as const, docker: [base + 500, base + 999] as const };

    // ---- the fleet: a control plane with runtime fleet, one agent on this engine --------------
    const fleetServer = await startGantry({
      config: { runtime: 'fleet', pods: { stopGraceMs: 2_000 } },
      env: { DOCKER_HOST },
    });
    servers.push(fleetServer);
    const made = spawnSync(
      process.execPath,
      [gantryBin, 'hosts', 'token', 'create', '--data-dir', fleetServer.dataDir],
      { encoding: 'utf8', env: { ...process.env, GANTRY_LOG_LEVEL: 'warn' } },
    );
    const token = made.stdout.trim();
    if (!/^gjt_/.test(token)) throw new Error(`gantry hosts token create: ${made.stderr}`);
    agent = spawn(
      process.execPath,
      [
        gantryBin,
        'agent',
        '--server',
        fleetServer.url,
        '--token',
        token,
        '--data-dir',
        join(scratch, 'agent'),
        '--name',
        'bench-host',
        '--public-ip',
        '127.0.0.1',
        '--port-range',
        `${portsOf.fleet[0]}-${portsOf.fleet[1]}`,
        '--disk-gb',
        '1000',
        '--docker-host',
        DOCKER_HOST,
        '--namespace',
        namespaces.fleet,
      ],
      // info: its `operation applied` lines time the agent's part
      {
        env: {
          ...process.env,
          GANTRY_LOG_LEVEL: 'info',
          GANTRY_AGENT_TOKEN: '',
          GANTRY_AGENT_SERVER: '',
          GANTRY_AGENT_DATA_DIR: '',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    agent.stdout!.on('data', (d: Buffer) => (agentOut += d.toString()));
    agent.stderr!.on('data', (d: Buffer) => (agentOut += d.toString()));
    const agentExit = new Promise<never>((_, reject) =>
      agent!.once('exit', (code) => reject(new Error(`gantry agent exited (${code}):\n${agentOut.slice(-3000)}`))),
    );
    agentExit.catch(() => undefined);
    const hostAvailable = (async () => {
      for (let i = 0; i < 300; i++) {
        const listing = spawnSync(
          process.execPath,
          [gantryBin, 'hosts', 'list', '--json', '--data-dir', fleetServer.dataDir],
          { encoding: 'utf8', env: { ...process.env, GANTRY_LOG_LEVEL: 'warn' } },
        );
        const hosts = JSON.parse(listing.stdout || '[]') as Array<{ state: string }>;
        if (hosts.some((h) => h.state === 'available') && agentOut.includes('reporting')) return;
        await sleep(100);
      }
      throw new Error(`the agent's host is not available in 30 s:\n${agentOut.slice(-3000)}`);
    })();
    await Promise.race([hostAvailable, agentExit]);

    // ---- the peer: the same server with runtime docker on the same engine ----------------------
    const dockerServer = await startGantry({
      config: {
        runtime: {
          kind: 'docker',
          docker: {
            namespace: namespaces.docker,
            bindIp: '0.0.0.0',
            publicIp: '127.0.0.1',
            portRange: portsOf.docker,
            diskGb: 1000,
          },
        },
        pods: { stopGraceMs: 2_000 },
      },
      env: { DOCKER_HOST },
    });
    servers.push(dockerServer);

    const sides: Record<'fleet' | 'docker', Side> = {
      fleet: {
        name: 'fleet',
        server: fleetServer,
        api: httpClient(fleetServer.url, { authorization: `Bearer ${fleetServer.key}` }),
        namespace: namespaces.fleet,
      },
      docker: {
        name: 'docker',
        server: dockerServer,
        api: httpClient(dockerServer.url, { authorization: `Bearer ${dockerServer.key}` }),
        namespace: namespaces.docker,
      },
    };
    clients.push(sides.fleet.api, sides.docker.api);

    const once = async (side: Side, round: number): Promise<Trip> => {
      const { api, namespace } = side;
      const posted = Date.now();
      const r = await api.json<PodView>('POST', '/v2/pods', {
        name: `ops-${side.name}-${round}`,
        image,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        ports: ['8000/http'],
        disk: 1,
      });
      const answered = Date.now();
      if (r.status !== 201 && r.status !== 200)
        throw new Error(`${side.name}: POST /v2/pods: ${r.status} ${JSON.stringify(r.body)}`);
      const id = r.body.id;
      let view: PodView;
      for (const deadline = Date.now() + 60_000; ;) {
        const g = await api.json<PodView>('GET', `/v2/pods/${id}`);
        if (g.status === 200 && (g.body.status ?? g.body.desiredStatus) === 'RUNNING') {
          view = g.body;
          break;
        }
        if (Date.now() > deadline)
          throw new Error(
            `${side.name}: pod ${id} not RUNNING in 60 s: ${JSON.stringify(g.body)}${side.name === 'fleet' ? `\nagent:\n${agentOut.slice(-3000)}` : ''}`,
          );
        await sleep(POLL_MS);
      }
      const seen = Date.now();
      const info = (await client.inspectContainer(`gantry-${namespace}-${id}`)) as unknown as {
        Created: string;
        State: { StartedAt: string };
      } | null;
      const del = await api.send('DELETE', `/v2/pods/${id}`);
      if (del.status >= 300) throw new Error(`${side.name}: DELETE /v2/pods/${id}: ${del.status} ${del.body}`);
      // the pod's vCPUs are free again once its container is gone
      for (
        let i = 0;
        (
          await client.listContainers({
            all: true,
            filters: { label: [`${LABEL.namespace}=${namespace}`, `${LABEL.kind}=pod`] },
          })
        ).length > 0;
        i++
      ) {
        if (i > 1500) throw new Error(`${side.name}: pod ${id}'s container still there 30 s after its DELETE`);
        await sleep(20);
      }
      return {
        id,
        posted,
        answered,
        seen,
        created: info ? engineMs(info.Created) : NaN,
        started: info ? engineMs(info.State.StartedAt) : NaN,
        running: Date.parse(view.startedAt!),
      };
    };

    const trips: Record<'fleet' | 'docker', Trip[]> = { fleet: [], docker: [] };
    const added: number[] = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const order = round % 2 === 0 ? (['fleet', 'docker'] as const) : (['docker', 'fleet'] as const);
      const got: Partial<Record<'fleet' | 'docker', Trip>> = {};
      for (const name of order) got[name] = await once(sides[name], round);
      if (round === 0) continue;
      trips.fleet.push(got.fleet!);
      trips.docker.push(got.docker!);
      added.push(got.fleet!.running - got.fleet!.posted - (got.docker!.running - got.docker!.posted));
    }

    // ---- the fleet's steps the server's store and the agent's log tell -----------------------------
    const db = new Database(join(fleetServer.dataDir, 'gantry.db'), { readonly: true, fileMustExist: true });
    const ops = new Map(
      (
        db
          .prepare("SELECT instance_id, created_at, acked_at FROM host_operations WHERE kind = 'start'")
          .all() as Array<{ instance_id: string; created_at: number; acked_at: number | null }>
      ).map((o) => [
        o.instance_id,
        { enqueued: Number(o.created_at), acked: o.acked_at === null ? NaN : Number(o.acked_at) },
      ]),
    );
    db.close();
    const appliedAt = new Map<string, number>();
    for (const line of agentOut.split('\n')) {
      if (!line.includes('"operation applied"')) continue;
      const entry = JSON.parse(line) as { kind?: string; instance?: string; time?: number };
      if (entry.kind === 'start' && entry.instance && typeof entry.time === 'number')
        appliedAt.set(entry.instance, entry.time);
    }

    const stat = (label: string, xs: number[]) => {
      const s = sorted(xs.filter(Number.isFinite));
      return {
        step: label,
        p50: ms(percentile(s, 50)),
        p90: ms(percentile(s, 90)),
        min: ms(s[0] ?? NaN),
        max: ms(s.at(-1) ?? NaN),
      };
    };
    const total = (t: Trip) => t.running - t.posted;
    const f = trips.fleet;
    const d = trips.docker;
    const opOf = (t: Trip) => ops.get(t.id) ?? { enqueued: NaN, acked: NaN };
    const appliedOf = (t: Trip) => appliedAt.get(t.id) ?? NaN;

    console.log(
      `\nPod create → RUNNING, ${ROUNDS} paired rounds after a warm-up, alternating which goes first (ms; engine at ${DOCKER_HOST}; node ${process.version})\n`,
    );
    printTable([
      stat('fleet: POST /v2/pods → RUNNING (the pod’s startedAt)', f.map(total)),
      stat(
        `  seen by the client polling every ${POLL_MS} ms`,
        f.map((t) => t.seen - t.posted),
      ),
      stat('docker: POST /v2/pods → RUNNING (the pod’s startedAt)', d.map(total)),
      stat(
        `  seen by the client polling every ${POLL_MS} ms`,
        d.map((t) => t.seen - t.posted),
      ),
      stat('added: fleet − docker, per round', added),
    ]);
    console.log(
      `(difference of the two medians: ${ms(percentile(sorted(f.map(total)), 50) - percentile(sorted(d.map(total)), 50))} ms)`,
    );

    console.log('\nWhere the time goes (ms between the two events named; p50 and p90 over the rounds)\n');
    const step = (label: string, fleet: (t: Trip) => number, docker: ((t: Trip) => number) | null) => ({
      step: label,
      'fleet p50': ms(percentile(sorted(f.map(fleet).filter(Number.isFinite)), 50)),
      'fleet p90': ms(percentile(sorted(f.map(fleet).filter(Number.isFinite)), 90)),
      'docker p50': docker ? ms(percentile(sorted(d.map(docker).filter(Number.isFinite)), 50)) : '',
      'docker p90': docker ? ms(percentile(sorted(d.map(docker).filter(Number.isFinite)), 90)) : '',
    });
    printTable([
      step(
        'POST → its 201 answer',
        (t) => t.answered - t.posted,
        (t) => t.answered - t.posted,
      ),
      step('POST → the start operation enqueued (created_at)', (t) => opOf(t).enqueued - t.posted, null),
      step(
        '  enqueued → container created (long-poll wake, delivery, the agent prepares)',
        (t) => t.created - opOf(t).enqueued,
        null,
      ),
      step(
        'POST → container created (the engine’s Created)',
        (t) => t.created - t.posted,
        (t) => t.created - t.posted,
      ),
      step(
        'container created → started (the engine’s StartedAt)',
        (t) => t.started - t.created,
        (t) => t.started - t.created,
      ),
      step(
        'container started → RUNNING written (the pod’s startedAt)',
        (t) => t.running - t.started,
        (t) => t.running - t.started,
      ),
      step('  started → the agent logs `operation applied`', (t) => appliedOf(t) - t.started, null),
      step(
        '  started → the start acknowledged on the control plane (acked_at)',
        (t) => opOf(t).acked - t.started,
        null,
      ),
    ]);

    const p50 = percentile(sorted(added), 50);
    // The engine's own create → start (~0.5 s here, ± tens of ms from one start to the next) is in
    // both totals and is most of their noise; the steps around it are the control plane's.
    const med = (xs: number[]) => percentile(sorted(xs.filter(Number.isFinite)), 50);
    const around = (xs: Trip[]) => med(xs.map((t) => t.created - t.posted)) + med(xs.map((t) => t.running - t.started));
    console.log('');
    printTable([
      {
        figure: 'pod create → RUNNING added by the fleet (fleet − docker), p50 of paired rounds',
        measured: `${ms(p50)} ms (p90 ${ms(percentile(sorted(added), 90))} ms)`,
        goal: `<= ${GOAL_MS} ms`,
        verdict: verdict(p50 <= GOAL_MS),
      },
      {
        figure: '  the same without the engine’s create → start: POST → created + started → RUNNING, p50s',
        measured: `${ms(around(f) - around(d))} ms (fleet ${ms(around(f))}, docker ${ms(around(d))})`,
      },
    ]);
    if (p50 > GOAL_MS) process.exitCode = 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanup();
  }
}

await main();
