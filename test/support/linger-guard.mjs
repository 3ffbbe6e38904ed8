// Loaded into every test file's process (scripts/test.mjs, `--import`). A test file whose tests have
// all finished but whose process stays alive — a server, socket, child process or timer left open —
// would otherwise sit until the runner's 300 s file timeout and show only as "cancelled 1". Here,
// once the file's last test and hooks are done, an unref'd timer waits GANTRY_TEST_LINGER_MS
// (default 15 s); it fires only if something else still holds the event loop, and then names what
// does and ends the file with exit code 1, so the leak fails fast and says where it is.
import { createHook } from 'node:async_hooks';
import { after } from 'node:test';

const limitMs = Number(process.env.GANTRY_TEST_LINGER_MS ?? 15_000);

// GANTRY_TEST_LINGER_TRACE=1: where each timer still pending was set, to find which one holds a file.
const timers = new Map();
if (process.env.GANTRY_TEST_LINGER_TRACE === '1') {
  Error.stackTraceLimit = 40;
  createHook({
    init(id, type, _trigger, resource) {
      if (type === 'Timeout') timers.set(id, { resource: new WeakRef(resource), stack: new Error().stack });
    },
    destroy(id) {
      timers.delete(id);
    },
  }).enable();
}
const pendingTimers = () =>
  [...timers.values()]
    .filter((t) => t.resource.deref()?.hasRef?.())
    .map(
      (t) =>
        `Timeout set at ${t.stack
          .split('\n')
          .filter(
            (line) => line.includes('    at ') && !line.includes('node:internal') && !line.includes('linger-guard'),
          )
          .slice(0, 6)
          .map((line) => line.trim())
          .join(' < ')}`,
    );

const describe = (handle) => {
  const kind = handle?.constructor?.name ?? typeof handle;
  try {
    if (kind === 'Socket' || kind === 'TLSSocket') {
      if (handle === process.stdout || handle === process.stderr || handle === process.stdin) return null;
      const local = handle.localPort ? `${handle.localAddress}:${handle.localPort}` : (handle._pipeName ?? '?');
      const remote = handle.remotePort ? `${handle.remoteAddress}:${handle.remotePort}` : '';
      return `${kind} ${local}${remote ? ` -> ${remote}` : ''}${handle.destroyed ? ' (destroyed)' : ''}`;
    }
    if (kind === 'Server') {
      const address = handle.address();
      return `Server listening on ${typeof address === 'string' ? address : `${address?.address}:${address?.port}`}`;
    }
    if (kind === 'ChildProcess')
      return `ChildProcess pid ${handle.pid} ${handle.spawnfile} ${(handle.spawnargs ?? []).slice(1, 4).join(' ')}`;
    return kind;
  } catch (err) {
    return `${kind} (${err instanceof Error ? err.message : String(err)})`;
  }
};

if (Number.isFinite(limitMs) && limitMs > 0) {
  after(() => {
    const timer = setTimeout(() => {
      const file = process.argv[1] ?? '?';
      const handles = [...process._getActiveHandles().map(describe).filter(Boolean), ...pendingTimers()];
      process.stderr.write(
        `linger-guard: ${file} still runs ${limitMs} ms after its last test; what holds it: ` +
          `${JSON.stringify(process.getActiveResourcesInfo())}\n` +
          handles.map((h) => `linger-guard:   ${h}\n`).join(''),
      );
      process.exit(1);
    }, limitMs);
    timer.unref();
  });
}
