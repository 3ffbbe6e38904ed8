/**
 * deploy/compose.yaml (docs/deploy.md "Compose") passes Compose's own validation: `config` of the
 * `docker-compose` Debian 12 ships (v1.29) and, where it is installed, of Compose v2
 * (`docker compose`). CI installs docker-compose; elsewhere a missing one skips. Nothing is started
 * here: test/deploy-compose-up.e2e.test.ts runs its `up` on stand-in images.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';

const root = join(import.meta.dirname, '..');
const composeFile = join(root, 'deploy', 'compose.yaml');
const exampleEnv = join(root, 'deploy', 'gantry.env.example');

interface Tool {
  name: string;
  argv: string[];
}
const tools: Tool[] = [];
if (spawnSync('docker-compose', ['version'], { encoding: 'utf8' }).status === 0)
  tools.push({ name: 'docker-compose (v1)', argv: ['docker-compose'] });
if (spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0)
  tools.push({ name: 'docker compose (v2)', argv: ['docker', 'compose'] });
if (tools.length === 0 && process.env.CI === 'true')
  throw new Error('CI=true: docker-compose is not installed (.ci/run installs it)');

function config(tool: Tool, envFile: string, extra: string[] = []) {
  const [cmd, ...pre] = tool.argv as [string, ...string[]];
  return spawnSync(cmd, [...pre, '--env-file', envFile, '-f', composeFile, ...extra, 'config'], {
    encoding: 'utf8',
    // the variables come from the env file alone
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  });
}

describe('deploy/compose.yaml', () => {
  for (const tool of tools) {
    test(`${tool.name} validates it with the example env file, with and without the metrics profile`, () => {
      for (const extra of [[], ['--profile', 'metrics']]) {
        const out = config(tool, exampleEnv, extra);
        assert.equal(out.status, 0, out.stderr);
        const resolved = parse(out.stdout) as {
          services: Record<string, { environment?: Record<string, string>; volumes?: unknown[] }>;
        };
        assert.deepEqual(Object.keys(resolved.services).sort(), ['gantry', 'grafana', 'postgres', 'prometheus']);
        const env = resolved.services.gantry!.environment!;
        assert.equal(env.GANTRY_DATABASE_URL, 'postgres://gantry:change-me@postgres:5432/gantry');
        assert.equal(env.GANTRY_SECRET_KEY, 'change-me');
      }
    });

    test(`${tool.name} refuses it, naming the variable, when the env file lacks a required secret`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'gantry-compose-'));
      try {
        const envFile = join(dir, 'gantry.env');
        writeFileSync(
          envFile,
          readFileSync(exampleEnv, 'utf8')
            .split('\n')
            .filter((line) => !line.startsWith('GANTRY_SECRET_KEY='))
            .join('\n'),
        );
        const out = config(tool, envFile);
        assert.notEqual(out.status, 0);
        assert.match(out.stderr, /set GANTRY_SECRET_KEY in the env file/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test('the metrics profile provisions the Prometheus data source the dashboard selects, and loads docs/grafana-dashboard.json', () => {
    const compose = parse(readFileSync(composeFile, 'utf8')) as {
      services: Record<string, { volumes?: string[] }>;
    };
    const mounts = compose.services.grafana!.volumes!;
    assert.ok(mounts.includes('../docs/grafana-dashboard.json:/var/lib/grafana/dashboards/gantry.json:ro'));
    const provider = parse(readFileSync(join(root, 'deploy/grafana/provisioning/dashboards/gantry.yaml'), 'utf8')) as {
      providers: Array<{ options: { path: string } }>;
    };
    assert.equal(provider.providers[0]!.options.path, '/var/lib/grafana/dashboards');
    const dashboard = JSON.parse(readFileSync(join(root, 'docs', 'grafana-dashboard.json'), 'utf8')) as {
      templating: { list: Array<{ name: string; type: string; query?: unknown }> };
    };
    // a provisioned dashboard has no import step to fill ${DS_PROMETHEUS}: a variable of that name does
    const variable = dashboard.templating.list.find((v) => v.name === 'DS_PROMETHEUS');
    assert.equal(variable?.type, 'datasource');
    assert.equal(variable?.query, 'prometheus');
  });
});
