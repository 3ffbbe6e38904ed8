/**
 * The client commands' contract with scripts (docs/cli.md): exit statuses, where the server and
 * the key come from (flags over the environment over the profile file) and `gantry login`. The
 * built CLI against a real `gantry serve`.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
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

describe('profiles: logout, list, use and rm', () => {
  /** Keys in the files below besides the server's: no run may print one either. */
  const OTHER_KEY = 'gty_other-profile-key-abcdefghijklmnopqrstuvwxyz';
  let n = 0;
  /** A fresh profile file (mode 0600 unless `mode` says otherwise) with `content` (an object is JSON). */
  const profileFile = (content: unknown, mode = 0o600): string => {
    const path = join(dir, `profiles-${++n}.json`);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content), { mode });
    chmodSync(path, mode);
    return path;
  };
  const withFile = async (path: string, args: string[], e: Record<string, string> = {}, stdin?: string) => {
    const r = await cli(args, { GANTRY_CLI_CONFIG: path, GANTRY_URL: '', GANTRY_API_KEY: '', ...e }, stdin);
    assert.ok(!r.stdout.includes(OTHER_KEY) && !r.stderr.includes(OTHER_KEY), `gantry ${args.join(' ')} printed a key`);
    return r;
  };
  const read = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
  const two = () => ({
    current: 'local',
    profiles: {
      local: { url: server.url, apiKey: KEY },
      prod: { url: 'https://gantry.example.com', apiKey: OTHER_KEY },
    },
  });

  test('logout removes only the current profile’s key, keeps the file mode 0600, and a second logout has nothing to remove', async () => {
    const path = profileFile(two());
    ok(await withFile(path, ['pods', 'list']), 'the profile works before');
    const r = await withFile(path, ['logout']);
    ok(r, 'logout');
    assert.match(r.stdout, /removed the API key of profile "local"/);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(read(path), {
      current: 'local',
      profiles: { local: { url: server.url }, prod: { url: 'https://gantry.example.com', apiKey: OTHER_KEY } },
    });
    const none = await withFile(path, ['pods', 'list']);
    assert.equal(none.status, 4, 'the profile has no key any more');
    assert.match(none.stderr, /no API key/);
    const again = await withFile(path, ['logout', '--json']);
    ok(again, 'a second logout');
    assert.deepEqual(json(again), { profile: 'local', url: server.url, path, removed: false });
  });

  test('logout --profile or GANTRY_PROFILE names the profile whose key goes', async () => {
    const path = profileFile(two());
    ok(await withFile(path, ['logout', '--profile', 'prod']), 'logout --profile prod');
    assert.equal(read(path).profiles.prod.apiKey, undefined);
    assert.equal(read(path).profiles.local.apiKey, KEY, 'the other profile keeps its key');
    ok(await withFile(path, ['logout'], { GANTRY_PROFILE: 'local' }), 'logout with GANTRY_PROFILE');
    assert.equal(read(path).profiles.local.apiKey, undefined);
  });

  test('logging out of a profile that is not there exits 2 naming the profiles there are, and changes nothing', async () => {
    const path = profileFile(two());
    const before = readFileSync(path, 'utf8');
    const r = await withFile(path, ['logout', '--profile', 'staging']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^gantry: no profile "staging" in .*\(it has "local", "prod"; /);
    assert.equal(r.stdout, '');
    assert.equal(readFileSync(path, 'utf8'), before);
    const noFile = await withFile(join(dir, 'absent', 'config.json'), ['logout']);
    assert.equal(noFile.status, 2);
    assert.match(noFile.stderr, /no profile "default" .*it has none/);
  });

  test('profiles list shows each profile’s URL and the default, and of a key never more than its first characters', async () => {
    const path = profileFile({ ...two(), profiles: { ...two().profiles, bare: { url: 'http://10.0.0.1:8080' } } });
    const r = await withFile(path, ['profiles', 'list']);
    ok(r, 'profiles list');
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /NAME +URL +KEY/);
    assert.match(lines[1]!, new RegExp(`^\\* +local +${server.url.replace(/\./g, '\\.')} +cli-cli…$`));
    assert.match(lines[2]!, /^ +prod +https:\/\/gantry\.example\.com +gty_othe…$/);
    assert.match(lines[3]!, /^ +bare +http:\/\/10\.0\.0\.1:8080 +-$/);
    assert.deepEqual(json(await withFile(path, ['profiles', 'list', '--json'])), [
      { name: 'local', url: server.url, keyPrefix: 'cli-cli…', default: true },
      { name: 'prod', url: 'https://gantry.example.com', keyPrefix: 'gty_othe…', default: false },
      { name: 'bare', url: 'http://10.0.0.1:8080', keyPrefix: null, default: false },
    ]);
    const short = profileFile({ profiles: { default: { url: server.url, apiKey: 'gty_shrt' } } });
    const shortList = json(await withFile(short, ['profiles', 'list', '--json']));
    assert.deepEqual(
      shortList,
      [{ name: 'default', url: server.url, keyPrefix: 'gt…', default: true }],
      'a quarter of a short key at most',
    );
    const empty = await withFile(join(dir, 'absent.json'), ['profiles', 'list']);
    ok(empty, 'no file');
    assert.match(empty.stdout, /^no profiles in /);
    assert.deepEqual(json(await withFile(join(dir, 'absent.json'), ['profiles', 'list', '--json'])), []);
  });

  test('profiles use makes a profile the default that commands then use; an unknown one exits 2 and changes nothing', async () => {
    const path = profileFile({ current: 'prod', profiles: two().profiles });
    assert.equal((await withFile(path, ['pods', 'list'])).status, 1, 'the prod URL cannot be reached');
    const r = await withFile(path, ['profiles', 'use', 'local', '--json']);
    ok(r, 'profiles use local');
    assert.deepEqual(json(r), { profile: 'local', url: server.url, path });
    assert.equal(read(path).current, 'local');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    ok(await withFile(path, ['pods', 'list']), 'commands use the new default');
    const before = readFileSync(path, 'utf8');
    const unknown = await withFile(path, ['profiles', 'use', 'nope']);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /no profile "nope"/);
    assert.equal(readFileSync(path, 'utf8'), before);
    for (const args of [['profiles', 'use'], ['profiles', 'use', 'a', 'b'], ['profiles', 'frobnicate'], ['profiles']])
      assert.equal((await withFile(path, args)).status, 2, `gantry ${args.join(' ')}`);
  });

  test('profiles rm removes a profile with its key, and when it was the default the file has none', async () => {
    const path = profileFile(two());
    const r = await withFile(path, ['profiles', 'rm', 'local']);
    ok(r, 'profiles rm local');
    assert.match(r.stdout, /removed profile "local"[^]*it was the default/);
    assert.deepEqual(read(path), { profiles: { prod: { url: 'https://gantry.example.com', apiKey: OTHER_KEY } } });
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal((await withFile(path, ['profiles', 'rm', 'local'])).status, 2, 'it is gone');
    assert.deepEqual(json(await withFile(path, ['profiles', 'rm', 'prod', '--json'])), {
      profile: 'prod',
      removed: true,
      wasDefault: false,
      path,
    });
    assert.deepEqual(read(path), { profiles: {} });
  });

  test('a profile file that is not JSON, has the wrong types, or is a folder is refused with exit 2 and never rewritten', async () => {
    const bad: [string, string | object, RegExp][] = [
      ['not JSON', `{"profiles": {"local": {"apiKey": "${OTHER_KEY}"`, /is not JSON/],
      ['empty', '', /is not JSON/],
      ['an array', [], /needs a "profiles" object/],
      ['profiles an array', { profiles: [] }, /needs a "profiles" object/],
      ['a profile a string', { profiles: { local: 'http://x' } }, /profile "local" .* is not an object/],
      ['a key a number', { profiles: { local: { url: server.url, apiKey: 12345 } } }, /"apiKey" must be a string/],
      ['a URL an object', { profiles: { local: { url: { host: 'x' } } } }, /"url" must be a string/],
      ['current a number', { current: 1, profiles: { local: { url: server.url } } }, /"current" .* must be/],
    ];
    for (const [what, content, message] of bad) {
      const path = profileFile(content);
      const before = readFileSync(path, 'utf8');
      for (const args of [
        ['logout', '--profile', 'local'],
        ['profiles', 'use', 'local'],
        ['profiles', 'rm', 'local'],
        ['profiles', 'list'],
        ['pods', 'list'],
      ]) {
        const r = await withFile(path, args);
        assert.equal(r.status, 2, `${what}: gantry ${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, message, what);
        assert.equal(r.stdout, '');
      }
      assert.equal(readFileSync(path, 'utf8'), before, `${what}: left as it was`);
    }
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    const r = await withFile(folder, ['logout']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /cannot read the profile file/);
  });

  test('a profile file others can read is warned about, and logout, use and rm leave it mode 0600', async () => {
    for (const args of [['logout'], ['profiles', 'use', 'prod'], ['profiles', 'rm', 'prod']]) {
      const path = profileFile(two(), 0o644);
      const r = await withFile(path, args);
      ok(r, args.join(' '));
      assert.match(r.stderr, /is readable by others \(mode 644\)/);
      assert.equal(statSync(path).mode & 0o777, 0o600, `${args.join(' ')} leaves it 0600`);
    }
    const listed = await withFile(profileFile(two(), 0o644), ['profiles', 'list']);
    ok(listed, 'list');
    assert.match(listed.stderr, /readable by others/);
  });

  test('a profile file reached through a symbolic link is rewritten where the link points, and the link stays', async () => {
    const target = profileFile(two());
    const link = join(dir, `link-${n}.json`);
    symlinkSync(target, link);
    ok(await withFile(link, ['profiles', 'use', 'prod']), 'profiles use through the link');
    assert.ok(lstatSync(link).isSymbolicLink(), 'the link is still a link');
    assert.equal(read(target).current, 'prod', 'the file it points to was written');
    assert.equal(statSync(target).mode & 0o777, 0o600);
  });

  test('odd names are only names: control characters are shown escaped, __proto__ is a profile like another, login refuses them', async () => {
    const path = profileFile({
      current: '__proto__',
      profiles: {
        // computed: a plain `__proto__:` in a literal sets the prototype, not a property
        ['__proto__']: { url: server.url, apiKey: KEY },
        'red\u001b[31m': { url: 'http://x\u001b[0m' },
        'with space': {},
        'rtl\u202egpj': {},
      },
    });
    const r = await withFile(path, ['profiles', 'list']);
    ok(r, 'list');
    assert.ok(!r.stdout.includes('\u001b'), 'no escape sequence reaches the terminal');
    assert.match(r.stdout, /^\* +__proto__ /m);
    assert.match(r.stdout, /"red\\u001b\[31m" +"http:\/\/x\\u001b\[0m" +-/);
    assert.match(r.stdout, /"with space"/);
    assert.match(r.stdout, /"rtl\\u202egpj"/, 'a direction mark is shown, not obeyed');
    ok(await withFile(path, ['pods', 'list']), 'the profile named __proto__ works');
    ok(await withFile(path, ['logout', '--profile', 'red\u001b[31m']), 'logout of a profile with no key');
    ok(await withFile(path, ['profiles', 'rm', '__proto__']), 'rm __proto__');
    const left = read(path);
    assert.deepEqual(Object.keys(left.profiles), ['red\u001b[31m', 'with space', 'rtl\u202egpj']);
    assert.equal(left.current, undefined);
    for (const name of ['__proto__', 'with space', 'a/b', '-x', 'x'.repeat(65)]) {
      const login = await withFile(path, ['login', '--url', server.url, `--profile=${name}`], {}, `${KEY}\n`);
      assert.equal(login.status, 2, `login --profile ${name}: ${login.stderr}`);
      assert.match(login.stderr, /is not one: 1 to 64 letters/);
    }
    assert.deepEqual(read(path), left, 'nothing was saved');
  });
});
