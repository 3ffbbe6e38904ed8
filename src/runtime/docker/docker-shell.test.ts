import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dockerEngine, makeDockerRuntime, noEngine, type RuntimeFixture } from '../../../test/support/docker.js';
import { typeInto } from '../../../test/support/terminal.js';
import { instanceSpec } from '../runtime-contract.js';

const engine = await dockerEngine();
after(() => engine?.client.close());

describe('the Docker runtime`s shell', { skip: engine ? false : noEngine() }, () => {
  const fixtures: RuntimeFixture[] = [];
  after(async () => {
    for (const f of fixtures) await f.cleanup();
  });

  test('a TTY exec in the container runs typed commands, passes resizes and answers the exit code', async () => {
    const f = makeDockerRuntime(engine!);
    fixtures.push(f);
    const spec = instanceSpec({ image: engine!.images.idle, env: { POD_MARK: 'mark-17' } });
    await f.runtime.start(spec);
    const shell = await f.runtime.shell(spec.id, { cols: 80, rows: 24, term: 'xterm' });
    const out = await typeInto(shell.stream, 'echo "hi-$((6*7)) $POD_MARK"', /hi-42 mark-17/);
    assert.match(out, /hi-42 mark-17/);
    await typeInto(shell.stream, 'stty size', /24 80/);
    shell.resize(132, 41);
    // the resize call is asynchronous: ask until the terminal has the new size
    let size = '';
    for (let i = 0; i < 20 && !/41 132/.test(size); i++)
      size = await typeInto(shell.stream, 'stty size', /\d+ \d+\s*\r?\n[^]*$/);
    assert.match(size, /41 132/);
    shell.stream.write('exit 7\n');
    assert.equal(await shell.exited, 7);
  });

  test('a shell ends when the container stops', async () => {
    const f = makeDockerRuntime(engine!);
    fixtures.push(f);
    const spec = instanceSpec({ image: engine!.images.idle });
    await f.runtime.start(spec);
    const shell = await f.runtime.shell(spec.id, { cols: 80, rows: 24 });
    await typeInto(shell.stream, 'echo ready', /ready\r?\n/);
    await f.runtime.stop(spec.id);
    const code = await Promise.race([
      shell.exited,
      new Promise((r) => setTimeout(() => r('still open'), 10_000).unref()),
    ]);
    assert.notEqual(code, 'still open');
  });

  test('an instance that does not run is refused in words', async () => {
    const f = makeDockerRuntime(engine!);
    fixtures.push(f);
    await assert.rejects(f.runtime.shell('nope', { cols: 80, rows: 24 }), /is not running/);
  });
});
