/**
 * docs/deploy.md "Compose", run as an operator runs it: its `cp` line copies the example env file,
 * the secrets are filled in, and its `up -d` line starts deploy/compose.yaml with Debian's
 * `docker-compose` (v1, as .ci/run installs it) on the test engine (DOCKER_HOST).
 *
 * No registry answers here, so the variables compose.yaml reads name stand-ins built from Debian
 * packages: POSTGRES_IMAGE=gantry-test/postgres:ci (.ci/build-rootfs.sh --variant postgres:
 * postgresql-15 with an entrypoint doing what the official image's does for this file) and
 * GANTRY_IMAGE=gantry-test/gantry:ci (.ci/build-image.sh). The docs' `--build` becomes `--no-build`:
 * the image is built beforehand (a build here needs the stand-in bases), and a missing one fails
 * instead of starting a build. The docs' `docker compose` (v2) is `docker-compose`; the project
 * name (COMPOSE_PROJECT_NAME) and the host ports are the env file's, unique to the run.
 *
 * Checked: PostgreSQL turns healthy, Gantry's /healthz answers on the published port, the
 * bootstrap key creates a template that is read back, and the row is in PostgreSQL (not in a
 * SQLite file); the metrics profile's Prometheus (PROMETHEUS_IMAGE=gantry-test/prometheus:ci,
 * Debian's) scrapes Gantry with the token; a `down` without -v and the same `up` find the template
 * again; `down -v` leaves nothing of the project. Grafana is not started: Debian does not package
 * it and no registry serves its image here.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dockerEngine, noEngine, uniqueNamespace } from './support/docker.js';
import { eventually, freePortRange } from './support/eventually.js';

const root = join(import.meta.dirname, '..');
const GANTRY_IMAGE = process.env.GANTRY_TEST_IMAGE ?? 'gantry-test/gantry:ci';
const POSTGRES_IMAGE = process.env.GANTRY_TEST_POSTGRES_IMAGE ?? 'gantry-test/postgres:ci';
const PROMETHEUS_IMAGE = 'gantry-test/prometheus:ci';

interface Ran {
  status: number;
  stdout: string;
  stderr: string;
}
/** Runs `argv` to its end (a ceiling of `ms`), never throwing: the caller asserts on the status. */
const runArgv = (argv: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; ms?: number } = {}) =>
  new Promise<Ran>((resolve) => {
    execFile(
      argv[0]!,
      argv.slice(1),
      { cwd: options.cwd, env: options.env, timeout: options.ms ?? 120_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        resolve({ status: err ? (typeof code === 'number' ? code : -1) : 0, stdout, stderr });
      },
    );
  });

const engine = await dockerEngine();
const dockerHost = engine?.dockerHost ?? '';
// The commands see the engine and nothing else of this environment: the env file is where the
// variables come from (a variable of the shell would win over it).
const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DOCKER_HOST: dockerHost };
const docker = async (...args: string[]): Promise<string> => {
  const out = await runArgv(['docker', ...args], { env });
  assert.equal(out.status, 0, `docker ${args.join(' ')}: ${out.stderr}`);
  return out.stdout.trim();
};

let skip: string | false = engine ? false : noEngine();
if (engine) {
  if ((await runArgv(['docker-compose', 'version'], { env })).status !== 0)
    skip = 'docker-compose is not installed (apt-get install docker-compose; .ci/run installs it)';
  else
    for (const [image, how] of [
      [GANTRY_IMAGE, '.ci/build-image.sh builds it'],
      [POSTGRES_IMAGE, '.ci/build-rootfs.sh --import --variant postgres builds it'],
      [PROMETHEUS_IMAGE, '.ci/build-rootfs.sh --import --variant prometheus builds it'],
    ])
      if (!skip && !(await docker('image', 'ls', '-q', image!))) skip = `the image ${image} is not built (${how})`;
  // CI installs and builds all of it before the tests (.ci/run): there a skip would hide a failure.
  if (skip && process.env.CI === 'true') throw new Error(`CI=true: ${skip}`);
}

// The docs' lines: the copy of the example, the `up`, and the `up` with the metrics profile.
const docs = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8');
const block = /```sh\n([\s\S]*?)```/.exec(docs.slice(docs.indexOf('## Compose')))![1]!.split('\n');
const cpLine = block.find((l) => l.startsWith('cp '))!;
const upLine = block.find((l) => / up -d/.test(l) && !l.includes('--profile'))!;
const metricsLine = block.find((l) => / up -d/.test(l) && l.includes('--profile metrics'))!;
const asHere = (line: string): string =>
  line.replace(/^docker compose /, 'docker-compose ').replace(/ --build\b/, ' --no-build');
const composeArgv = (subcommand: string[]): string[] => {
  const up = asHere(upLine).split(' ');
  return [...up.slice(0, up.indexOf('up')), ...subcommand];
};

const dir = mkdtempSync(join(tmpdir(), 'gantry-compose-up-'));
cpSync(join(root, 'deploy'), join(dir, 'deploy'), { recursive: true });
const project = `gantrycompose${uniqueNamespace()}`;
const KEY = randomBytes(24).toString('hex');
let apiUrl = '';
let templateId = '';
let prometheusUrl = '';

const sh = (line: string) => runArgv(['sh', '-c', line], { cwd: dir, env, ms: 150_000 });
const compose = (...subcommand: string[]) => runArgv(composeArgv(subcommand), { cwd: dir, env, ms: 150_000 });
const logs = async (): Promise<string> => {
  const out = await compose('logs', '--no-color', '--tail', '40');
  return `${out.stdout}${out.stderr}`.slice(-6000);
};
const ofProject = async (kind: 'ps' | 'volume' | 'network'): Promise<string[]> => {
  const filter = ['--filter', `label=com.docker.compose.project=${project}`];
  const out = await docker(...(kind === 'ps' ? ['ps', '-a', '-q'] : [kind, 'ls', '-q']), ...filter);
  return out ? out.split('\n') : [];
};

after(async () => {
  if (!skip) await compose('down', '-v', '--timeout', '5');
  rmSync(dir, { recursive: true, force: true });
});

const api = async <T>(method: string, path: string, body?: unknown, key = KEY) => {
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
};

/**
 * A GET's status and body, or null when the connection fails or the answer takes over 5 s. Polls use
 * node:http, whose socket holds the event loop while it waits, and a ceiling timer: a fetch of a
 * port whose container was restarting (docker-proxy accepting, then resetting) once stayed pending
 * with nothing holding the loop, and the file ended under the test.
 */
const poll = (url: string) =>
  new Promise<{ status: number; body: string } | null>((resolve) => {
    const req = get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(null));
    });
    const ceiling = setTimeout(() => req.destroy(new Error('no answer within 5 s')), 5_000);
    req.on('error', () => resolve(null));
    req.on('close', () => clearTimeout(ceiling));
  });

/** Waits for Gantry's /healthz; a container that exited (restart: unless-stopped starts it again) fails at once. */
async function answers(): Promise<void> {
  const gantry = (await compose('ps', '-q', 'gantry')).stdout.trim();
  assert.ok(gantry, `a gantry container of project ${project}`);
  await eventually(
    async () => `Gantry's /healthz at ${apiUrl}: ${await logs()}`,
    async () => {
      if ((await poll(`${apiUrl}/healthz`))?.status === 200) return true;
      const restarts = await docker('inspect', '-f', '{{.RestartCount}}', gantry);
      if (restarts !== '0')
        assert.fail(`Gantry's container exited and was restarted ${restarts} time(s): ${await logs()}`);
      return false;
    },
    60_000,
    250,
  );
}

async function upAsDocumented(): Promise<void> {
  const up = await sh(asHere(upLine));
  assert.equal(up.status, 0, `${asHere(upLine)}: ${up.stderr}\n${await logs()}`);
}

describe("docs/deploy.md's compose `up`", { skip }, () => {
  test('runs PostgreSQL healthy and Gantry on the published port, where the bootstrap key stores a template in PostgreSQL', async () => {
    assert.match(cpLine, /^cp deploy\/gantry\.env\.example deploy\/gantry\.env$/);
    assert.match(upLine, /--env-file deploy\/gantry\.env -f deploy\/compose\.yaml up -d/);
    const copied = await sh(cpLine);
    assert.equal(copied.status, 0, copied.stderr);

    // what the docs say to fill in (hex secrets), and this run's own names, images and ports
    const [port] = await freePortRange(4);
    apiUrl = `http://127.0.0.1:${port}`;
    const values: Record<string, string> = {
      COMPOSE_PROJECT_NAME: project,
      POSTGRES_PASSWORD: randomBytes(32).toString('hex'),
      GANTRY_SECRET_KEY: randomBytes(32).toString('hex'),
      GANTRY_BOOTSTRAP_KEY: KEY,
      GANTRY_PUBLIC_URL: apiUrl,
      GANTRY_METRICS_TOKEN: randomBytes(32).toString('hex'),
    };
    const envFile = join(dir, 'deploy', 'gantry.env');
    let text = readFileSync(envFile, 'utf8');
    for (const [name, value] of Object.entries(values)) {
      const line = new RegExp(`^${name}=.*$`, 'm');
      assert.match(text, line, `the example env file has ${name}`);
      text = text.replace(line, `${name}=${value}`);
    }
    const extra = {
      POSTGRES_IMAGE,
      GANTRY_IMAGE,
      PROMETHEUS_IMAGE,
      GANTRY_PORT: port,
      GANTRY_PROXY_PORT: port + 1,
      GANTRY_SSH_PORT: port + 2,
      PROMETHEUS_PORT: port + 3,
    };
    prometheusUrl = `http://127.0.0.1:${extra.PROMETHEUS_PORT}`;
    text += Object.entries(extra)
      .map(([name, value]) => `${name}=${value}\n`)
      .join('');
    writeFileSync(envFile, text);

    await upAsDocumented();
    const postgres = (await compose('ps', '-q', 'postgres')).stdout.trim();
    assert.ok(postgres, `a postgres container of project ${project}`);
    assert.equal(await docker('inspect', '-f', '{{.State.Health.Status}}', postgres), 'healthy');
    await answers();

    assert.equal((await api('GET', '/v2/pods', undefined, 'not-the-key')).status, 401);
    const created = await api<{ id: string }>('POST', '/v2/templates', {
      name: 'stored-by-compose',
      imageName: 'busybox:latest',
      isServerless: true,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    templateId = created.body.id;
    const read = await api<{ name: string }>('GET', `/v2/templates/${templateId}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.name, 'stored-by-compose');

    // the row is in the compose file's PostgreSQL, which refuses a wrong password over TCP
    const psql = (password: string, sql: string) =>
      compose(
        'exec',
        '-T',
        '-e',
        `PGPASSWORD=${password}`,
        'postgres',
        'psql',
        '-h',
        'postgres',
        '-U',
        'gantry',
        '-d',
        'gantry',
        '-tAc',
        sql,
      );
    const row = await psql(values.POSTGRES_PASSWORD!, `SELECT name FROM templates WHERE id = '${templateId}'`);
    assert.equal(row.status, 0, row.stderr);
    assert.equal(row.stdout.trim(), 'stored-by-compose');
    const refused = await psql('wrong', 'SELECT 1');
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /password authentication failed for user "gantry"/);
    const files = await compose('exec', '-T', 'gantry', 'ls', '/var/lib/gantry');
    assert.doesNotMatch(files.stdout, /\.db\b/, 'no SQLite file in the data volume');
  });

  test("the metrics profile's Prometheus scrapes Gantry's /metrics with the env file's token", async () => {
    assert.ok(templateId, 'the first test started the project');
    // Grafana is left out: no image of it is built here (Debian does not package it)
    const line = `${asHere(metricsLine)} prometheus`;
    const up = await sh(line);
    assert.equal(up.status, 0, `${line}: ${up.stderr}\n${await logs()}`);
    interface Target {
      labels: { job: string };
      health: string;
      lastError: string;
    }
    let last: Target[] = [];
    await eventually(
      async () => `Prometheus' gantry target up: ${JSON.stringify(last)}\n${await logs()}`,
      async () => {
        const res = await poll(`${prometheusUrl}/api/v1/targets`);
        if (res?.status !== 200) return false;
        last = (JSON.parse(res.body) as { data: { activeTargets: Target[] } }).data.activeTargets;
        const gantry = last.find((t) => t.labels.job === 'gantry');
        // a failed scrape (a 401 from a wrong token) fails at once, with Prometheus' reason
        if (gantry?.health === 'down') assert.fail(`Prometheus' scrape of Gantry failed: ${gantry.lastError}`);
        return gantry?.health === 'up';
      },
      60_000,
      500,
    );
    const query = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent('up{job="gantry"}')}`);
    const result = ((await query.json()) as { data: { result: Array<{ value: [number, string] }> } }).data.result;
    assert.equal(result[0]?.value[1], '1');
  });

  test('after `down` without -v, the same `up` serves what was stored from the kept volumes', async () => {
    assert.ok(templateId, 'the first test stored a template');
    const down = await compose('down', '--timeout', '10');
    assert.equal(down.status, 0, down.stderr);
    assert.deepEqual(await ofProject('ps'), [], 'down removes the containers');
    const kept = (
      await docker('volume', 'ls', '--format', '{{.Name}}', '--filter', `label=com.docker.compose.project=${project}`)
    ).split('\n');
    for (const volume of ['postgres-data', 'gantry-data'])
      assert.ok(kept.includes(`${project}_${volume}`), `down without -v keeps ${volume}: ${kept.join(' ')}`);

    await upAsDocumented();
    await answers();
    const read = await api<{ name: string }>('GET', `/v2/templates/${templateId}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.name, 'stored-by-compose');
  });

  test('`down -v` removes the containers, the network and the volumes of the project', async () => {
    const down = await compose('down', '-v', '--timeout', '10');
    assert.equal(down.status, 0, down.stderr);
    assert.deepEqual(await ofProject('ps'), []);
    assert.deepEqual(await ofProject('volume'), []);
    assert.deepEqual(await ofProject('network'), []);
  });
});
