/**
 * A real `gantry serve` for the client-command tests (test/cli-client*.test.ts): SQLite, the
 * process runtime (pods run without Docker), an image mapped to test/fixtures/echo-worker.ts for
 * serverless workers; and `cli()`, which runs the built CLI against it and checks that no run ever
 * prints the API key.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gantryBin, spawnGantry, type SpawnedGantry } from './spawn-gantry.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const KEY = 'cli-client-admin-key-0123456789';

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface CliServer {
  server: SpawnedGantry;
  dir: string;
  /** Runs the built CLI with the server's URL and the admin key in the environment unless `env` says otherwise. */
  cli(args: string[], env?: Record<string, string>, stdin?: string): Promise<Run>;
  close(): Promise<void>;
}

export async function startCliServer(): Promise<CliServer> {
  const dir = mkdtempSync(join(tmpdir(), 'gantry-cli-client-'));
  // The profile file of every run unless a test names another: absent, so nothing leaks in from $HOME.
  const noProfile = join(dir, 'no-profile.json');
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      images: {
        'cli-echo:dev': {
          command: [process.execPath, '--import', 'tsx', join(ROOT, 'test/fixtures/echo-worker.ts')],
          cwd: ROOT,
        },
      },
      serverless: { autoscaler: { intervalMs: 200 } },
    }),
  );
  const server = await spawnGantry(['--data-dir', dir, '--config', join(dir, 'config.json')], {
    GANTRY_BOOTSTRAP_KEY: KEY,
    GANTRY_LOG_LEVEL: 'error',
  });
  const cli = (args: string[], env: Record<string, string> = {}, stdin = ''): Promise<Run> =>
    new Promise((done, fail) => {
      const child = spawn(process.execPath, [gantryBin, ...args], {
        env: {
          ...process.env,
          GANTRY_URL: server.url,
          GANTRY_API_KEY: KEY,
          GANTRY_PROFILE: '',
          GANTRY_CLI_CONFIG: noProfile,
          ...env,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdin.end(stdin);
      const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      child.once('error', fail);
      child.once('close', (status) => {
        clearTimeout(timer);
        assert.ok(!stdout.includes(KEY) && !stderr.includes(KEY), `gantry ${args.join(' ')} printed the API key`);
        done({ status, stdout, stderr });
      });
    });
  return {
    server,
    dir,
    cli,
    close: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const ok = (r: Run, what: string): void => assert.equal(r.status, 0, `${what}: exit ${r.status}\n${r.stderr}`);
export const json = (r: Run): any => JSON.parse(r.stdout);
