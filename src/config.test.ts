import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from './config.js';

function withFile(text: string, check: (config: Config) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-config-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, text);
    check(loadConfig({ env: { GANTRY_DATA_DIR: dir }, flags: { config: path } }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a misspelt config key is reported with the keys known in its section, and the rest still applies', () => {
  withFile(
    'jobs:\n  retryBudgte: 9\n  takeWaitMs: 5000\nserverless:\n  autoscaler:\n    idleTimout: 3\nimages:\n  any-name:dev: { command: ["true"] }\n',
    (config) => {
      assert.equal(config.warnings.length, 2, config.warnings.join('\n'));
      assert.match(
        config.warnings[0]!,
        /unknown config key "jobs\.retryBudgte" is ignored \(known here: .*retryBudget/,
      );
      assert.match(config.warnings[1]!, /"serverless\.autoscaler\.idleTimout"/);
      assert.equal(config.jobs.takeWaitMs, 5000);
      assert.equal(config.jobs.retryBudget, 3, 'the misspelt key did not apply');
    },
  );
});

test('group commit settings default to the store (null concurrency) and can be set', () => {
  withFile('{}', (config) => {
    assert.equal(config.jobs.commitConcurrency, null);
    assert.equal(config.jobs.maxBatchSize, 1000);
    assert.deepEqual(config.warnings, []);
  });
  withFile('jobs: { commitConcurrency: 8, maxBatchSize: 200 }', (config) => {
    assert.equal(config.jobs.commitConcurrency, 8);
    assert.equal(config.jobs.maxBatchSize, 200);
  });
});

test('the public job URL follows the job listener when there is one, else the main public URL', () => {
  withFile('{}', (config) => {
    assert.equal(config.server.jobPort, null);
    assert.equal(config.server.publicJobUrl, config.server.publicUrl);
  });
  withFile('server: { jobPort: 9090 }', (config) => {
    assert.equal(config.server.publicJobUrl, 'http://127.0.0.1:9090');
  });
  withFile('server: { jobPort: 9090, publicJobUrl: "https://api.example.test/" }', (config) => {
    assert.equal(config.server.publicJobUrl, 'https://api.example.test', 'without the trailing slash');
  });
});

test('a worker long-poll longer than the SDKs wait (90 s) is refused at start, naming the setting', () => {
  withFile('jobs: { takeWaitMs: 85000, stopWaitMs: 1000 }', (config) =>
    assert.deepEqual([config.jobs.takeWaitMs, config.jobs.stopWaitMs], [85_000, 1000]),
  );
  assert.throws(() => withFile('jobs: { takeWaitMs: 95000 }', () => {}), /jobs\.takeWaitMs must be at most 85000 ms/);
  assert.throws(() => withFile('jobs: { stopWaitMs: 120000 }', () => {}), /jobs\.stopWaitMs must be at most 85000 ms/);
});

test("an image mapping's tenantEnv and tenantArgs are read, and a malformed tenantEnv is refused naming the image", () => {
  withFile(
    'images:\n  w:1: { command: ["./run.sh"], tenantEnv: ["MODEL_*", "LOG_LEVEL"], tenantArgs: false }\n',
    (config) => {
      assert.deepEqual(config.images['w:1']?.tenantEnv, ['MODEL_*', 'LOG_LEVEL']);
      assert.equal(config.images['w:1']?.tenantArgs, false);
    },
  );
  assert.throws(
    () => withFile('images:\n  w:1: { command: ["./run.sh"], tenantEnv: ["MODEL-*"] }\n', () => {}),
    /images\["w:1"\]\.tenantEnv must be a list of variable names or NAME_PREFIX\* patterns/,
  );
});

test('an image mapped to a bare interpreter that takes tenant args is warned about; a script, or tenantArgs false, is not', () => {
  withFile(
    'images:\n  py:1: { command: ["/usr/bin/python3", "-u"] }\n  node:1: { command: ["node"] }\n  ok:1: { command: ["python3", "-u", "handler.py"] }\n  closed:1: { command: ["python3"], tenantArgs: false }\n',
    (config) => {
      const warned = config.warnings.filter((w) => w.includes('bare interpreter'));
      assert.equal(warned.length, 2, warned.join('\n'));
      assert.match(
        warned[0]!,
        /^images\["py:1"\] maps to the bare interpreter "\/usr\/bin\/python3 -u": a tenant's args would be its arguments/,
      );
      assert.match(warned[1]!, /^images\["node:1"\]/);
    },
  );
});

/** loadConfig with a config file holding `text` and the environment `env`. */
function load(text: string, env: Record<string, string> = {}): Config {
  let config: Config | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'gantry-config-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, text);
    config = loadConfig({ env: { GANTRY_DATA_DIR: join(dir, 'data'), ...env }, flags: { config: path } });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return config;
}

test('the runtime is process by default, keeps runtime.process.allowMultipleAccounts, and uses the demo fleet', () => {
  const config = load('runtime: { process: { allowMultipleAccounts: true } }');
  assert.equal(config.runtime.kind, 'process');
  assert.equal(config.runtime.process.allowMultipleAccounts, true);
  assert.ok(config.fleet.length > 1);
  assert.deepEqual(config.warnings, []);
});

test('each runtime has its own opt-in to several accounts, from the file or the environment, and neither sets the other', () => {
  const docker = load('runtime: { kind: docker, docker: { allowMultipleAccountsOnHostNetwork: true } }');
  assert.equal(docker.runtime.docker.allowMultipleAccountsOnHostNetwork, true);
  assert.equal(docker.runtime.process.allowMultipleAccounts, false);
  assert.deepEqual(docker.warnings, []);
  const byEnv = load('runtime: docker', { GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'true' });
  assert.equal(byEnv.runtime.docker.allowMultipleAccountsOnHostNetwork, true);
  assert.equal(byEnv.runtime.process.allowMultipleAccounts, false);
  assert.equal(
    load('runtime: { docker: { allowMultipleAccountsOnHostNetwork: true } }', {
      GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'false',
    }).runtime.docker.allowMultipleAccountsOnHostNetwork,
    false,
    'the environment wins',
  );
  const processOnly = load('runtime: docker', { GANTRY_PROCESS_RUNTIME_MULTI_ACCOUNT: 'true' });
  assert.equal(processOnly.runtime.docker.allowMultipleAccountsOnHostNetwork, false);
  assert.throws(
    () => load('runtime: docker', { GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT: 'sure' }),
    /runtime\.docker\.allowMultipleAccountsOnHostNetwork must be true or false/,
  );
});

test('runtime: docker is the short form of the mapping, and GANTRY_RUNTIME overrides the file', () => {
  assert.equal(load('runtime: docker').runtime.kind, 'docker');
  assert.equal(load('runtime: { kind: docker }').runtime.kind, 'docker');
  assert.equal(load('runtime: docker', { GANTRY_RUNTIME: 'process' }).runtime.kind, 'process');
  assert.equal(load('{}', { GANTRY_RUNTIME: 'docker' }).runtime.kind, 'docker');
  assert.throws(
    () => load('runtime: kubernetes'),
    /Invalid configuration: runtime\.kind must be one of process, docker, fleet/,
  );
  assert.throws(
    () => load('{}', { GANTRY_RUNTIME: 'podman' }),
    /runtime\.kind must be one of process, docker, fleet \(from GANTRY_RUNTIME\)/,
  );
  assert.throws(() => load('runtime: [docker]'), /runtime must be "process", "docker", "fleet", or a mapping/);
});

test('the docker runtime’s settings have their defaults, and DOCKER_HOST overrides the file’s engine', () => {
  const config = load('runtime: docker');
  const { namespace, ...rest } = config.runtime.docker;
  assert.deepEqual(rest, {
    host: 'unix:///var/run/docker.sock',
    hostId: null,
    dataCenterId: null,
    cloud: 'SECURE',
    publicIp: null,
    bindIp: '0.0.0.0',
    portRange: [20000, 29999],
    diskGb: null,
    gpuMode: 'auto',
    cpuFlavors: null,
    nvidiaSmi: 'nvidia-smi',
    registries: { allow: [], only: false, private: 'refuse' },
    networks: { pool: '10.224.0.0/12', subnetPrefix: 24, emptyGraceMs: 600_000 },
    firewall: { mode: 'install', command: [], allow: [] },
    allowMultipleAccountsOnHostNetwork: false,
  });
  assert.match(namespace, /^[0-9a-f]{12}$/);
  assert.deepEqual(config.fleet, [], 'the docker runtime discovers its host; the demo fleet is not used');
  const file =
    'runtime:\n  kind: docker\n  docker: { host: "tcp://10.0.0.5:2375", hostId: rack-7, dataCenterId: EU-RO-1, cloud: COMMUNITY, publicIp: 203.0.113.7, bindIp: 10.0.0.5, portRange: [41000, 41099], diskGb: 250, gpuMode: env-only, cpuFlavors: [cpu3c], nvidiaSmi: /opt/nv/nvidia-smi, namespace: team-a }\n';
  const set = load(file).runtime.docker;
  assert.deepEqual(
    [
      set.host,
      set.hostId,
      set.dataCenterId,
      set.cloud,
      set.publicIp,
      set.bindIp,
      set.portRange,
      set.diskGb,
      set.gpuMode,
      set.cpuFlavors,
      set.nvidiaSmi,
      set.namespace,
    ],
    [
      'tcp://10.0.0.5:2375',
      'rack-7',
      'EU-RO-1',
      'COMMUNITY',
      '203.0.113.7',
      '10.0.0.5',
      [41000, 41099],
      250,
      'env-only',
      ['cpu3c'],
      '/opt/nv/nvidia-smi',
      'team-a',
    ],
  );
  assert.equal(
    load(file, { DOCKER_HOST: 'unix:///run/user/1000/docker.sock' }).runtime.docker.host,
    'unix:///run/user/1000/docker.sock',
  );
});

test('a malformed docker setting is refused naming it; a bad DOCKER_HOST only stops the docker runtime', () => {
  const refused: Array<[string, RegExp]> = [
    [
      'host: "ssh://me@box"',
      /runtime\.docker\.host "ssh:\/\/me@box" must be unix:\/\/\/path\/docker\.sock or tcp:\/\/host:port/,
    ],
    ['dataCenterId: XX-1', /runtime\.docker\.dataCenterId "XX-1" is not in the catalog/],
    ['cpuFlavors: [cpu9z]', /runtime\.docker\.cpuFlavors names "cpu9z", which is not in the catalog/],
    ['portRange: [30000, 20000]', /runtime\.docker\.portRange must be \[first, last\]/],
    ['bindIp: everywhere', /runtime\.docker\.bindIp "everywhere" must be an IP address/],
    ['gpuMode: cuda', /runtime\.docker\.gpuMode must be one of auto, nvidia, env-only/],
    ['namespace: "Team A"', /runtime\.docker\.namespace must be 1 to 32 lowercase letters/],
    ['cloud: PRIVATE', /runtime\.docker\.cloud must be one of SECURE, COMMUNITY/],
    [
      'allowMultipleAccountsOnHostNetwork: yes',
      /runtime\.docker\.allowMultipleAccountsOnHostNetwork must be true or false/,
    ],
  ];
  for (const [setting, message] of refused)
    assert.throws(() => load(`runtime: { kind: docker, docker: { ${setting} } }`), message, setting);
  assert.throws(
    () => load('runtime: docker', { DOCKER_HOST: 'https://box:2376' }),
    /DOCKER_HOST "https:\/\/box:2376" must be/,
  );
  assert.equal(load('{}', { DOCKER_HOST: 'ssh://me@box' }).runtime.kind, 'process');
});

test('the registry policy is read from runtime.docker.registries, GANTRY_DOCKER_REGISTRIES_ALLOW replacing its allow list', () => {
  const file =
    'runtime:\n  kind: docker\n  docker:\n    registries: { allow: ["localhost:5000", "*.corp.example", "[::1]:5000", docker.io], only: true, private: allow }\n';
  const config = load(file);
  assert.deepEqual(config.runtime.docker.registries, {
    allow: ['localhost:5000', '*.corp.example', '[::1]:5000', 'docker.io'],
    only: true,
    private: 'allow',
  });
  assert.deepEqual(config.warnings, []);
  assert.deepEqual(
    load(file, { GANTRY_DOCKER_REGISTRIES_ALLOW: ' registry.internal:5000 ,docker.io,' }).runtime.docker.registries
      .allow,
    ['registry.internal:5000', 'docker.io'],
  );
});

test('a malformed registry policy is refused naming the setting; only without an allow list would pull nothing and is refused', () => {
  const refused: Array<[string, RegExp]> = [
    ['registries: [localhost]', /runtime\.docker\.registries must be a mapping \{ allow, only, private \}/],
    ['registries: { allow: localhost }', /runtime\.docker\.registries\.allow must be a list of registries/],
    [
      'registries: { allow: ["http://registry:5000"] }',
      /runtime\.docker\.registries\.allow: "http:\/\/registry:5000" is not a registry/,
    ],
    ['registries: { allow: ["*.10.0.0.5"] }', /a wildcard goes before a domain name/],
    [
      'registries: { only: true }',
      /runtime\.docker\.registries\.only needs registries in runtime\.docker\.registries\.allow/,
    ],
    ['registries: { private: deny }', /runtime\.docker\.registries\.private must be one of refuse, allow/],
    ['registries: { only: maybe, allow: [docker.io] }', /runtime\.docker\.registries\.only must be true or false/],
  ];
  for (const [setting, message] of refused)
    assert.throws(() => load(`runtime: { kind: docker, docker: { ${setting} } }`), message, setting);
  assert.throws(
    () => load('runtime: docker', { GANTRY_DOCKER_REGISTRIES_ALLOW: 'registry/path' }),
    /GANTRY_DOCKER_REGISTRIES_ALLOW: "registry\/path" is not a registry/,
  );
});

test('the default namespace is stable for one installation and differs between installations; a database password does not enter it', () => {
  const dirA = loadConfig({ env: { GANTRY_DATA_DIR: '/srv/gantry-a', GANTRY_RUNTIME: 'docker' } }).runtime.docker
    .namespace;
  assert.equal(
    loadConfig({ env: { GANTRY_DATA_DIR: '/srv/gantry-a', GANTRY_RUNTIME: 'docker' } }).runtime.docker.namespace,
    dirA,
  );
  assert.notEqual(
    loadConfig({ env: { GANTRY_DATA_DIR: '/srv/gantry-b', GANTRY_RUNTIME: 'docker' } }).runtime.docker.namespace,
    dirA,
  );
  const pg = (url: string, schema = 'public') =>
    loadConfig({
      env: {
        GANTRY_DATA_DIR: '/srv/x',
        GANTRY_RUNTIME: 'docker',
        GANTRY_DATABASE_URL: url,
        GANTRY_DATABASE_SCHEMA: schema,
      },
    }).runtime.docker.namespace;
  const first = pg('postgres://gantry:old-secret@db.internal:5432/gantry');
  assert.equal(pg('postgres://gantry:rotated@db.internal/gantry'), first, 'same database, another password');
  assert.notEqual(
    pg('postgres://gantry:old-secret@db.internal:5432/gantry', 'tenant2'),
    first,
    'another schema is another installation',
  );
  assert.notEqual(pg('postgres://gantry:old-secret@db2.internal:5432/gantry'), first);
});

test('a declared fleet is refused with the docker runtime, saying the host is discovered', () => {
  assert.throws(
    () => load('runtime: docker\nfleet:\n  - { id: box-1, dataCenterId: US-TX-3 }\n'),
    /Invalid configuration: fleet declares the hosts of the process runtime; with runtime docker the host is discovered from the engine/,
  );
  assert.throws(
    () => load('fleet: []\n', { GANTRY_RUNTIME: 'docker' }),
    /fleet declares the hosts of the process runtime/,
  );
});

test('with the docker runtime an image entry may leave out its command, and what docker does not read is warned about', () => {
  const config = load(
    'runtime: docker\nimages:\n  web:1: { health: { type: http, port: 8000, path: /ping } }\n  old:1: { command: ["./run.sh"], cwd: ./w, tenantEnv: ["A"] }\n',
  );
  assert.deepEqual(config.images['web:1']?.command, []);
  assert.equal(config.images['web:1']?.health?.port, 8000);
  assert.deepEqual(config.warnings, [
    'images["old:1"].command, .cwd, .tenantEnv are not used by the docker runtime, which runs the image as built (only health is read)',
  ]);
  assert.throws(
    () => load('images:\n  web:1: { health: { port: 8000 } }\n'),
    /images\["web:1"\]\.command must be a non-empty list of strings/,
  );
});

test('an unknown runtime.docker key is warned about with the keys known there', () => {
  const config = load('runtime: { kind: docker, docker: { sockett: /x } }');
  assert.equal(config.warnings.length, 1);
  assert.match(
    config.warnings[0]!,
    /unknown config key "runtime\.docker\.sockett" is ignored \(known here: host, namespace, hostId/,
  );
});

test('the orphan grace defaults to 60 s and is read from runtime.orphanGraceMs, GANTRY_RUNTIME_ORPHAN_GRACE_MS winning', () => {
  withFile('{}', (config) => assert.equal(config.runtime.orphanGraceMs, 60_000));
  withFile('runtime: { orphanGraceMs: 5000 }', (config) => {
    assert.equal(config.runtime.orphanGraceMs, 5000);
    assert.deepEqual(config.warnings, []);
  });
  const dir = mkdtempSync(join(tmpdir(), 'gantry-config-'));
  try {
    const path = join(dir, 'gantry.yaml');
    writeFileSync(path, 'runtime: { orphanGraceMs: 5000 }');
    assert.equal(
      loadConfig({ env: { GANTRY_DATA_DIR: dir, GANTRY_RUNTIME_ORPHAN_GRACE_MS: '250' }, flags: { config: path } })
        .runtime.orphanGraceMs,
      250,
    );
    assert.throws(
      () =>
        loadConfig({ env: { GANTRY_DATA_DIR: dir, GANTRY_RUNTIME_ORPHAN_GRACE_MS: 'soon' }, flags: { config: path } }),
      /orphanGraceMs/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the process runtime's orphan grace defaults to 30 s and is read from the file, or from the environment first", () => {
  withFile('{}', (config) => assert.equal(config.runtime.process.orphanGraceMs, 30_000));
  withFile('runtime:\n  process:\n    orphanGraceMs: 5000\n', (config) => {
    assert.deepEqual(config.warnings, []);
    assert.equal(config.runtime.process.orphanGraceMs, 5_000);
  });
  const config = loadConfig({ env: { GANTRY_DATA_DIR: tmpdir(), GANTRY_PROCESS_ORPHAN_GRACE_MS: '1500' } });
  assert.equal(config.runtime.process.orphanGraceMs, 1_500);
  assert.throws(
    () => loadConfig({ env: { GANTRY_DATA_DIR: tmpdir(), GANTRY_PROCESS_ORPHAN_GRACE_MS: 'soon' } }),
    /runtime\.process\.orphanGraceMs must be a non-negative number/,
  );
});

const DEFAULT_TUNNELS = {
  maxStreams: 8192,
  maxTunnelsPerAgent: 16,
  maxDialing: 2048,
  idleMs: 300_000,
  maxWindowBytes: 4 * 1024 * 1024,
};

test('the hosts’ tunnels’ bounds are set under fleet.tunnels; a window past 16 MiB is refused, one under 256 KiB raised to it', () => {
  assert.deepEqual(
    load(
      'fleet:\n  tunnels: { maxStreams: 100, maxTunnelsPerAgent: 2, maxDialing: 10, idleMs: 5000, maxWindowBytes: 1048576 }\n',
    ).agents.tunnels,
    { maxStreams: 100, maxTunnelsPerAgent: 2, maxDialing: 10, idleMs: 5000, maxWindowBytes: 1_048_576 },
  );
  assert.throws(() => load('fleet: { tunnels: { maxWindowBytes: 33554432 } }\n'), /fleet\.tunnels\.maxWindowBytes/);
  assert.equal(load('fleet: { tunnels: { maxWindowBytes: 1000 } }\n').agents.tunnels.maxWindowBytes, 256 * 1024);
});

test('the agent’s downloads at once are bounded under fleet.downloads, per client address and in all; none is raised to one', () => {
  assert.deepEqual(load('fleet: { downloads: { maxPerClient: 1, maxConcurrent: 4 } }\n').agents.downloads, {
    maxPerClient: 1,
    maxConcurrent: 4,
  });
  assert.throws(() => load('fleet: { downloads: { maxPerClient: 5000 } }\n'), /fleet\.downloads\.maxPerClient/);
  assert.equal(load('fleet: { downloads: { maxPerClient: 0 } }\n').agents.downloads.maxPerClient, 1, 'raised to one');
});

test('the agents’ timings default to 10 s heartbeats, a 30 s timeout, 25 s polls, a 5 min lost grace and 1 h join tokens', () => {
  assert.deepEqual(load('{}').agents, {
    heartbeatMs: 10_000,
    heartbeatTimeoutMs: 30_000,
    pollWaitMs: 25_000,
    lostGraceMs: 300_000,
    joinTokenTtlMs: 3_600_000,
    tunnels: DEFAULT_TUNNELS,
    downloads: { maxPerClient: 2, maxConcurrent: 16 },
  });
});

test('fleet as a mapping sets the agents’ timings and may still declare the process runtime’s hosts under fleet.hosts', () => {
  const config = load(
    'fleet:\n  heartbeatMs: 2000\n  heartbeatTimeoutMs: 7000\n  pollWaitMs: 5000\n  lostGraceMs: 60000\n  joinTokenTtlMs: 600000\n  hosts:\n    - { id: box-1, dataCenterId: US-TX-3 }\n',
  );
  assert.deepEqual(config.agents, {
    heartbeatMs: 2000,
    heartbeatTimeoutMs: 7000,
    pollWaitMs: 5000,
    lostGraceMs: 60_000,
    joinTokenTtlMs: 600_000,
    tunnels: DEFAULT_TUNNELS,
    downloads: { maxPerClient: 2, maxConcurrent: 16 },
  });
  assert.deepEqual(
    config.fleet.map((h) => h.id),
    ['box-1'],
  );
  assert.deepEqual(config.warnings, []);
  // only timings: the demo fleet stays, and docker accepts it (its host is discovered)
  assert.ok(load('fleet: { heartbeatMs: 2000 }\n').fleet.length > 1);
  assert.equal(load('runtime: docker\nfleet: { heartbeatMs: 2000 }\n').agents.heartbeatMs, 2000);
  assert.throws(
    () => load('runtime: docker\nfleet: { hosts: [] }\n'),
    /fleet declares the hosts of the process runtime/,
  );
  assert.match(load('fleet: { heartbeatMS: 1 }\n').warnings[0] ?? '', /unknown config key "fleet\.heartbeatMS"/);
});

test('agent timings that cannot work are refused naming the setting', () => {
  assert.throws(
    () => load('fleet: { heartbeatMs: 30000 }\n'),
    /fleet\.heartbeatTimeoutMs \(30000\) must be longer than fleet\.heartbeatMs \(30000\)/,
  );
  assert.throws(() => load('fleet: { pollWaitMs: 30001 }\n'), /fleet\.pollWaitMs must be at most 30000 ms/);
  assert.throws(() => load('fleet: { joinTokenTtlMs: 10 }\n'), /fleet\.joinTokenTtlMs must be at least 1000 ms/);
  assert.throws(() => load('fleet: { lostGraceMs: -1 }\n'), /fleet\.lostGraceMs must be a non-negative number/);
});

test('the SSH proxy is on at 2222 by default, on a picked port when the server`s is, and advertises the public URL`s host', () => {
  const defaults = load('{}');
  assert.deepEqual(
    [defaults.ssh.enabled, defaults.ssh.port, defaults.ssh.host, defaults.ssh.portConfigured],
    [true, 2222, '127.0.0.1', false],
  );
  assert.equal(load('server: { port: 0 }').ssh.port, 0);
  const set = load('ssh: { port: 2022, idleTimeoutMs: 1000 }', {
    GANTRY_PUBLIC_URL: 'https://gantry.example.com',
    GANTRY_SSH_ENABLED: 'false',
  });
  assert.deepEqual(
    [set.ssh.enabled, set.ssh.port, set.ssh.host, set.ssh.idleTimeoutMs, set.ssh.portConfigured],
    [false, 2022, 'gantry.example.com', 1000, true],
  );
  assert.equal(load('{}', { GANTRY_SSH_PORT: '2200', GANTRY_SSH_HOST: 'ssh.example.com' }).ssh.host, 'ssh.example.com');
  assert.throws(() => load('ssh: { port: 70000 }'), /ssh\.port must be a TCP port/);
});

test('metrics are off without a token, and a token shorter than 16 characters stops the start without being echoed', () => {
  assert.equal(loadConfig({ env: { GANTRY_DATA_DIR: tmpdir() } }).metrics.token, null);
  assert.throws(
    () => loadConfig({ env: { GANTRY_DATA_DIR: tmpdir(), GANTRY_METRICS_TOKEN: 'shortsecret' } }),
    (err: Error) =>
      /metrics\.token must be a string of at least 16 characters \(from GANTRY_METRICS_TOKEN\)/.test(err.message) &&
      !err.message.includes('shortsecret'),
  );
  const token = 'a-token-of-enough-length';
  assert.equal(loadConfig({ env: { GANTRY_DATA_DIR: tmpdir(), GANTRY_METRICS_TOKEN: token } }).metrics.token, token);
});

test('suspended FlashBoot time is free by default and billed at serverless.flashboot.suspendedPricePerGpuHour when set', () => {
  withFile('{}', (config) =>
    assert.deepEqual(config.serverless.flashboot, {
      maxKeepMs: 600_000,
      suspendedPricePerGpuHour: 0,
      prepull: { intervalMs: 15_000, diskBudgetGb: 100 },
    }),
  );
  withFile('serverless: { flashboot: { suspendedPricePerGpuHour: 0.07 } }', (config) =>
    assert.equal(config.serverless.flashboot.suspendedPricePerGpuHour, 0.07),
  );
});

test("the load balancer's replica intervals default to 1 s / 250 ms / 5 s / 15 s and a lifetime not over twice the heartbeat is refused", () => {
  withFile('{}', (config) =>
    assert.deepEqual(config.proxy.loadBalancer.replicas, {
      refreshMs: 1_000,
      publishGapMs: 250,
      heartbeatMs: 5_000,
      ttlMs: 15_000,
    }),
  );
  withFile('proxy: { loadBalancer: { replicas: { refreshMs: 200, heartbeatMs: 1000, ttlMs: 3000 } } }', (config) => {
    assert.equal(config.proxy.loadBalancer.replicas.refreshMs, 200);
    assert.equal(config.proxy.loadBalancer.replicas.ttlMs, 3_000);
  });
  assert.throws(
    () => withFile('proxy: { loadBalancer: { replicas: { heartbeatMs: 5000, ttlMs: 10000 } } }', () => {}),
    /proxy\.loadBalancer\.replicas\.ttlMs \(10000\) must be more than twice heartbeatMs \(5000\)/,
  );
});
