/**
 * Tests that pass on a quiet machine and fail on a loaded one wait on real time: a sleep of a fixed
 * length stands for "long enough", a timeout of a few milliseconds for "at once". This rule reads
 * the syntax tree of every test file and test helper and finds
 *
 * - a real-time wait of a fixed length: `setTimeout(…, 500)` / `setInterval(…, 500)`, or a call of
 *   a function named `sleep`, `delay` or `wait` with a number literal (a method such as the fake
 *   timers' `timers.sleep(500)` is not one: it waits on the injected clock), unless it is in a
 *   loop: then it is the pause of a poll that checks its condition;
 * - the promise timers (`node:timers/promises`) imported at all;
 * - (a timer racing what is awaited, `Promise.race([exited, sleep(20_000)])`, is a ceiling, not a
 *   wait: it only has to be at least 100 ms;)
 * - a timeout under 100 ms: a number literal below 100 given to a property or parameter whose name
 *   says timeout (`timeoutMs: 20`), or to `AbortSignal.timeout`; (an object given to a call whose
 *   answer an assertion compares at once, `assert.equal(checkingIntervalMs({ requestTimeoutMs: 20 }), 10)`,
 *   is the input of a computation, not a timeout set on anything running: nothing is awaited between
 *   them, so nothing waits on it;)
 *
 * Time in a test is the injected clock's (`FakeClock`, `FakeTimers`); a wait for something real is
 * a wait for a condition (`eventually`, `until`) with a generous ceiling. The helpers that
 * implement those waits are the only files allowed to touch real timers, each named below with
 * its reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');

/** Files that may wait on real time, and why. Paths from the repository root. */
const ALLOWED: Record<string, string> = {
  'test/support/eventually.ts':
    'the condition waits (`eventually`, `until`): they poll a real process or container, which has no clock to inject',
  'test/support/timers-due.ts':
    "`afterTimersDue`: lets a component's own short interval run at least once (timers fire in due order), for negative checks",
  'test/support/fake-timers.ts': 'the fake timers themselves (they only yield to the event loop)',
  'test/support/docker-daemons.ts':
    'starts and stops real Docker Engines in network namespaces: its waits are polls and ceilings on real daemons',
};

/**
 * Test files that still wait a fixed real time, each with why it is not yet a wait on a condition
 * or on the clock. The list only shrinks: a file that no longer needs its entry fails the last test.
 */
const NOT_YET: Record<string, string> = {
  'test/faults.e2e.test.ts': 'kills the server once a load ran for a while; a negative check (no fourth webhook call)',
  'test/fleet-replicas.e2e.test.ts': "a real agent's heartbeat timeout must pass (4 s) before the check",
  'test/python-worker.e2e.test.ts': 'a negative check on a real Python worker: its next job stays queued',
  'test/runpod-sdk.e2e.test.ts': 'a negative check on the real SDK: a cancelled job stays CANCELLED',
};

/** The smallest timeout a test may set, in ms: below it a loaded machine misses it as a matter of course. */
const MIN_TIMEOUT_MS = 100;

const WAIT_NAMES = new Set(['sleep', 'delay', 'wait']);
const TIMER_NAMES = new Set(['setTimeout', 'setInterval']);
/** A timeout in milliseconds, by its name (`timeoutMs`, `requestTimeoutMs`, `timeout`); `idleTimeout` in seconds is a domain value. */
const isTimeoutName = (name: string): boolean => /^timeout(Ms)?$|TimeoutMs$/.test(name);

/**
 * A timer callback that only resolves a promise (`setTimeout(resolve, 500)`, `() => r()`): a wait.
 * A callback that acts (kills, rejects, aborts) is a ceiling, which only has to be long enough.
 */
function justResolves(cb: ts.Node | undefined): boolean {
  if (!cb) return false;
  if (ts.isIdentifier(cb)) return true;
  if (!ts.isArrowFunction(cb) && !ts.isFunctionExpression(cb)) return false;
  let body: ts.Node = cb.body;
  if (ts.isBlock(body)) {
    if (body.statements.length !== 1 || !ts.isExpressionStatement(body.statements[0]!)) return false;
    body = body.statements[0].expression;
  }
  return ts.isCallExpression(body) && ts.isIdentifier(body.expression) && body.arguments.length <= 1;
}

interface Finding {
  file: string;
  line: number;
  what: string;
}

/** Assertions given a promise or a function: what they are given runs, and may wait on its timeouts. */
const RUNNING_ASSERTIONS = new Set(['assert.rejects', 'assert.doesNotReject', 'assert.throws', 'assert.doesNotThrow']);

/**
 * `assert.equal(checkingIntervalMs({ requestTimeoutMs: 20, … }), 10)`: an object given to a call
 * that is itself given to an assertion, with nothing between them (no `await`, no function): the
 * call's answer is compared at once, so its timeouts are values computed over, not waited on.
 */
function computedInAssertion(object: ts.ObjectLiteralExpression): boolean {
  const call = object.parent;
  if (!ts.isCallExpression(call) || !call.arguments.includes(object)) return false;
  const assertion = call.parent;
  if (!ts.isCallExpression(assertion) || !assertion.arguments.includes(call)) return false;
  const name = calleeName(assertion);
  return (name === 'assert' || (name?.startsWith('assert.') ?? false)) && !RUNNING_ASSERTIONS.has(name!);
}

/** The number a literal (or `-`/`_`-separated literal) stands for, or null when it is not one. */
function literalNumber(node: ts.Node | undefined): number | null {
  if (!node) return null;
  if (ts.isNumericLiteral(node)) return Number(node.text.replaceAll('_', ''));
  if (ts.isParenthesizedExpression(node)) return literalNumber(node.expression);
  return null;
}

/** The name a call is made by: `sleep(…)` → sleep, `AbortSignal.timeout(…)` → AbortSignal.timeout. */
function calleeName(call: ts.CallExpression): string | null {
  const e = call.expression;
  if (ts.isIdentifier(e)) return e.text;
  if (ts.isPropertyAccessExpression(e))
    return ts.isIdentifier(e.expression) ? `${e.expression.text}.${e.name.text}` : e.name.text;
  return null;
}

/** What in `source` waits on real time or sets a timeout too short for a loaded machine. */
function findRealTimeWaits(file: string, source: string): Finding[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Finding[] = [];
  const add = (node: ts.Node, what: string): void => {
    found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, what });
  };
  // A wait inside a loop is the pause of a poll (the loop checks its condition), not a wait for
  // "long enough"; the executor of `new Promise(…)` around a timer belongs to the code around it.
  const promiseExecutor = (n: ts.Node): boolean =>
    (ts.isArrowFunction(n) || ts.isFunctionExpression(n)) &&
    ts.isNewExpression(n.parent) &&
    ts.isIdentifier(n.parent.expression) &&
    n.parent.expression.text === 'Promise';
  // A timer racing the thing awaited (`Promise.race([exited, sleep(20_000)])`) is a ceiling.
  const inRace = (node: ts.Node): boolean => {
    for (let n = node.parent; n && !ts.isStatement(n); n = n.parent)
      if (ts.isCallExpression(n) && calleeName(n) === 'Promise.race') return true;
    return false;
  };
  const inLoop = (node: ts.Node): boolean => {
    for (let n = node.parent; n && (!ts.isFunctionLike(n) || promiseExecutor(n)); n = n.parent)
      if (ts.isIterationStatement(n, false)) return true;
    return false;
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const from = node.moduleSpecifier.text;
      if (from === 'node:timers/promises' || from === 'timers/promises')
        add(node, `imports ${from} (real timers): use the injected clock or a condition wait`);
    }
    if (ts.isCallExpression(node)) {
      const name = calleeName(node);
      if (name && TIMER_NAMES.has(name)) {
        const ms = literalNumber(node.arguments[1]);
        if (
          ms !== null &&
          ms > 0 &&
          !inLoop(node) &&
          (ms < MIN_TIMEOUT_MS || (justResolves(node.arguments[0]) && !inRace(node)))
        )
          add(node, `${name}(…, ${ms}): a real-time wait of a fixed length`);
      } else if (ts.isIdentifier(node.expression) && WAIT_NAMES.has(node.expression.text)) {
        const ms = literalNumber(node.arguments[0]);
        if (ms !== null && ms > 0 && !inLoop(node) && (ms < MIN_TIMEOUT_MS || !inRace(node)))
          add(node, `${name}(${ms}): a real-time wait of a fixed length`);
      } else if (name === 'AbortSignal.timeout') {
        const ms = literalNumber(node.arguments[0]);
        if (ms !== null && ms < MIN_TIMEOUT_MS)
          add(node, `AbortSignal.timeout(${ms}): a timeout under ${MIN_TIMEOUT_MS} ms`);
      }
    }
    if (ts.isPropertyAssignment(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) {
      const ms = literalNumber(node.initializer);
      if (
        isTimeoutName(node.name.text) &&
        ms !== null &&
        ms > 0 &&
        ms < MIN_TIMEOUT_MS &&
        !(ts.isObjectLiteralExpression(node.parent) && computedInAssertion(node.parent))
      )
        add(node, `${node.name.text}: ${ms}: a timeout under ${MIN_TIMEOUT_MS} ms`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Test files (`*.test.ts` under src/ and test/) and test helpers (test/support/), from the repository root. */
function testSources(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) {
        if (name !== 'node_modules' && name !== 'fixtures') walk(p);
        continue;
      }
      const rel = relative(root, p).split(sep).join('/');
      if (rel.endsWith('.test.ts') || (rel.startsWith('test/support/') && rel.endsWith('.ts'))) out.push(rel);
    }
  };
  walk(join(root, 'src'));
  walk(join(root, 'test'));
  return out.sort();
}

test('no test or test helper waits a fixed real time or sets a timeout under 100 ms, outside the named helpers', () => {
  const files = testSources();
  assert.ok(files.length > 200, `the rule reads the test files (found ${files.length})`);
  const findings = files
    .filter((f) => !(f in ALLOWED) && !(f in NOT_YET))
    .flatMap((f) => findRealTimeWaits(f, readFileSync(join(root, f), 'utf8')))
    .map((f) => `${f.file}:${f.line} ${f.what}`);
  assert.deepEqual(findings, []);
});

test('every helper the rule allows exists and still needs its exception', () => {
  for (const file of Object.keys(ALLOWED)) {
    const source = readFileSync(join(root, file), 'utf8');
    assert.ok(/setTimeout|setImmediate|timers\/promises/.test(source), `${file} no longer uses real timers`);
  }
});

test('every file the rule lets wait for now still does (the list only shrinks)', () => {
  const done = Object.keys(NOT_YET).filter(
    (f) => findRealTimeWaits(f, readFileSync(join(root, f), 'utf8')).length === 0,
  );
  assert.deepEqual(done, [], 'files to take off NOT_YET');
});

test('the rule finds fixed real-time waits, promise timers and short timeouts, and passes waits on the clock or on a condition, and timeouts a pure computation is asserted on', () => {
  const src = `
    import { setTimeout as sleepFor } from 'node:timers/promises';
    await new Promise((r) => setTimeout(r, 500));
    setInterval(tick, 1_000);
    await sleep(300);
    await delay(50);
    const s = AbortSignal.timeout(20);
    probe({ timeoutMs: 20, intervalMs: 5 });
    run({ 'requestTimeoutMs': 50 });
    setTimeout(() => resolve(), 200);
    setTimeout(() => child.kill(), 20);
    assert.equal(await call({ timeoutMs: 20 }), 1);
    await assert.rejects(call({ timeoutMs: 20 }));
    assert.ok(start({ server: { timeoutMs: 20 } }));
    // what is allowed
    await new Promise((r) => setTimeout(r, 0));
    setTimeout(done, ms);
    await timers.advance(5_000);
    await timers.sleep(500);
    await eventually('it runs', check, 30_000);
    while (!done()) await new Promise((r) => setTimeout(r, 50));
    await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 5_000))]);
    run({ timeoutMs: 100, idleTimeoutMs: 60_000, headersTimeoutMs: 0, idleTimeout: 5 });
    setTimeout(() => child.kill('SIGKILL'), 10_000);
    AbortSignal.timeout(60_000);
    assert.equal(checkingIntervalMs({ requestTimeoutMs: 20, headersTimeoutMs: 0 }), 10);
  `;
  assert.deepEqual(
    findRealTimeWaits('x.test.ts', src).map((f) => [f.line, f.what]),
    [
      [2, 'imports node:timers/promises (real timers): use the injected clock or a condition wait'],
      [3, 'setTimeout(…, 500): a real-time wait of a fixed length'],
      [4, 'setInterval(…, 1000): a real-time wait of a fixed length'],
      [5, 'sleep(300): a real-time wait of a fixed length'],
      [6, 'delay(50): a real-time wait of a fixed length'],
      [7, 'AbortSignal.timeout(20): a timeout under 100 ms'],
      [8, 'timeoutMs: 20: a timeout under 100 ms'],
      [9, 'requestTimeoutMs: 50: a timeout under 100 ms'],
      [10, 'setTimeout(…, 200): a real-time wait of a fixed length'],
      [11, 'setTimeout(…, 20): a real-time wait of a fixed length'],
      [12, 'timeoutMs: 20: a timeout under 100 ms'],
      [13, 'timeoutMs: 20: a timeout under 100 ms'],
      [14, 'timeoutMs: 20: a timeout under 100 ms'],
    ],
  );
});
