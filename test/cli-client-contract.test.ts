/**
 * The client commands' contract with scripts (docs/cli.md): exit statuses, where the server and
 * the key come from (flags over the environment over the profile file) and `gantry login`. The
 * built CLI against a real `gantry serve`.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { KEY, json, ok, startCliServer, type CliServer } from './support/cli-client.js';

const GPU = 'NVIDIA GeForce RTX 4090';

let t: CliServer;
let server: SpawnedGantry;
let dir: string;
const cli = (args: string[], env?: Record<string, string>, stdin?: string) => t.cli(args, env, stdin);

before(async () => {
  t = await startCliServer();
  ({ server, dir } = t);
});
after(() => t.close());

describe('exit statuses and errors', () => {
  test('what does not exist exits 3 with the API’s problem on stderr', async () => {
    for (const args of [
      ['pods', 'get', 'nosuchpod'],
      ['endpoints', 'get', 'nosuchendpoint'],
      ['templates', 'rm', 'nosuchtemplate'],
      ['jobs', 'status', 'nosuchendpoint', 'nosuchjob'],
    ]) {
      const r = await cli(args);
      assert.equal(r.status, 3, `gantry ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^gantry: Not Found \(404 NOT_FOUND\): /);
      assert.equal(r.stdout, '');
    }
  });

  test('a bad key, no key, or a read key writing exits 4', async () => {
    const bad = await cli(['pods', 'list'], { GANTRY_API_KEY: 'gty_not-a-key-of-this-server' });
    assert.equal(bad.status, 4);
    assert.match(bad.stderr, /Unauthorized \(401 UNAUTHORIZED\)/);
    const none = await cli(['pods', 'list'], { GANTRY_API_KEY: '' });
    assert.equal(none.status, 4);
    assert.match(none.stderr, /no API key/);

    const made = runGantry(['keys', 'create', '--account', 'admin', '--scope', 'read', '--data-dir', dir]);
    assert.equal(made.status, 0, made.stderr);
    const readKey = made.stdout.trim();
    assert.equal((await cli(['pods', 'list'], { GANTRY_API_KEY: readKey })).status, 0, 'a read key reads');
    const write = await cli(['volumes', 'create', '--name', 'x', '--size', '10', '--data-center', 'US-TX-3'], {
      GANTRY_API_KEY: readKey,
    });
    assert.equal(write.status, 4);
    assert.match(write.stderr, /Forbidden \(403/);
  });

  test('usage errors exit 2: unknown commands and flags, missing arguments, bad values', async () => {
    for (const args of [
      ['pods', 'frobnicate'],
      ['pods'],
      ['pods', 'list', '--bogus'],
      ['pods', 'get'],
      ['pods', 'get', 'a', 'b'],
      ['pods', 'create', '--image', 'x'],
      ['pods', 'create', '--name', 'x', '--gpu', GPU, '--wait', '--timeout', 'soon'],
      ['jobs', 'run', 'ep', '--input', '{not json'],
      ['jobs', 'run', 'ep'],
      ['volumes', 'create', '--name', 'v', '--size', 'big'],
      ['pods', 'list', '--', 'extra'],
    ]) {
      const r = await cli(args);
      assert.equal(r.status, 2, `gantry ${args.join(' ')}: ${r.status} ${r.stderr}`);
      assert.match(r.stderr, /^gantry: /);
      assert.equal(r.stdout, '');
    }
    assert.deepEqual(json(await cli(['pods', 'list', '--json'])), [], 'nothing was created by a refused command');
  });

  test('a server that cannot be reached exits 1 naming it', async () => {
    const r = await cli(['pods', 'list'], { GANTRY_URL: 'http://127.0.0.1:9' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /cannot reach http:\/\/127\.0\.0\.1:9/);
  });
});

describe('the server and the key: flags over the environment over the profile file', () => {
  const wrongUrl = 'http://127.0.0.1:9';
  let file: string;

  before(() => {
    file = join(dir, 'profiles.json');
    writeFileSync(
      file,
      JSON.stringify({
        current: 'good',
        profiles: { good: { url: server.url, apiKey: KEY }, stale: { url: wrongUrl, apiKey: 'gty_stale' } },
      }),
      { mode: 0o600 },
    );
  });

  const env = (e: Record<string, string>) => ({ GANTRY_CLI_CONFIG: file, GANTRY_URL: '', GANTRY_API_KEY: '', ...e });

  test('the current profile is used when neither flags nor the environment say otherwise', async () => {
    ok(await cli(['pods', 'list'], env({})), 'the current profile');
    assert.equal((await cli(['pods', 'list', '--profile', 'stale'], env({}))).status, 1, '--profile picks another');
    assert.equal((await cli(['pods', 'list'], env({ GANTRY_PROFILE: 'stale' }))).status, 1, 'GANTRY_PROFILE too');
    const missing = await cli(['pods', 'list', '--profile', 'nope'], env({}));
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /no profile "nope"/);
  });

  test('the environment wins over the profile, and flags over the environment', async () => {
    // the stale profile's URL and key are overridden one by one
    ok(
      await cli(['pods', 'list'], env({ GANTRY_PROFILE: 'stale', GANTRY_URL: server.url, GANTRY_API_KEY: KEY })),
      'env over profile',
    );
    ok(
      await cli(['pods', 'list', '--url', server.url, '--api-key', KEY], env({ GANTRY_PROFILE: 'stale' })),
      'flags over profile',
    );
    ok(
      await cli(
        ['pods', 'list', '--url', server.url, '--api-key', KEY],
        env({ GANTRY_URL: wrongUrl, GANTRY_API_KEY: 'gty_wrong' }),
      ),
      'flags over env',
    );
    const envKeyLoses = await cli(['pods', 'list', '--api-key', 'gty_wrong'], env({ GANTRY_API_KEY: KEY }));
    assert.equal(envKeyLoses.status, 4, 'the flag’s key is the one sent');
    const envUrlWins = await cli(['pods', 'list'], env({ GANTRY_URL: wrongUrl }));
    assert.equal(envUrlWins.status, 1, 'GANTRY_URL is used over the current profile’s URL');
  });

  test('login checks the key and saves the profile in a file only its owner can read', async () => {
    const saved = join(dir, 'login', 'config.json');
    const refused = await cli(
      ['login', '--url', server.url, '--profile', 'ci'],
      { GANTRY_CLI_CONFIG: saved, GANTRY_API_KEY: '' },
      'gty_bad\n',
    );
    assert.equal(refused.status, 4);
    assert.throws(() => statSync(saved), 'nothing is saved for a refused key');

    const r = await cli(
      ['login', '--url', server.url, '--profile', 'ci'],
      { GANTRY_CLI_CONFIG: saved, GANTRY_API_KEY: '' },
      `${KEY}\n`,
    );
    ok(r, 'login');
    assert.equal(statSync(saved).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(saved, 'utf8')), {
      current: 'ci',
      profiles: { ci: { url: server.url, apiKey: KEY } },
    });
    ok(
      await cli(['pods', 'list'], { GANTRY_CLI_CONFIG: saved, GANTRY_URL: '', GANTRY_API_KEY: '' }),
      'the saved profile works',
    );
  });
});
