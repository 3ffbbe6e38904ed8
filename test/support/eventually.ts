/** Waiting on real processes and containers in end-to-end tests (real time: there is no clock to inject into them). */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `intervalMs` until it answers a truthy value, or fails after `ms` naming `what`. */
export async function eventually<T>(
  what: string | (() => string | Promise<string>),
  check: () => Promise<T | null | undefined | false>,
  ms = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${typeof what === 'string' ? what : await what()}`);
    await sleep(intervalMs);
  }
}

/**
 * The first port the kernel hands out by itself (to `listen(0)` and to outgoing connections):
 * ports from it on may be taken by any process at any moment.
 */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 12_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * `count` consecutive ports nothing listens on (on 127.0.0.1), from a random start below the
 * kernel's ephemeral range: a range inside it could be taken, between this check and a container
 * publishing it, by another test's server on port 0 or an outgoing connection's local port.
 */
export async function freePortRange(count: number): Promise<[number, number]> {
  const free = (port: number) =>
    new Promise<boolean>((ok) => {
      const s = createServer();
      s.once('error', () => ok(false));
      s.listen(port, '127.0.0.1', () => s.close(() => ok(true)));
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = 10_000 + Math.floor(Math.random() * (ephemeralStart() - 10_000 - count));
    let all = true;
    for (let p = first; p < first + count && all; p++) all = await free(p);
    if (all) return [first, first + count - 1];
  }
  throw new Error(`no ${count} free consecutive ports found`);
}

/**
 * Polls `cond` every few milliseconds until it holds, or fails after `ms` naming `what`. The
 * ceiling is generous on purpose: it bounds a hung test, it does not time anything (a loaded
 * machine may take seconds for what a quiet one does at once).
 */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await sleep(5);
  }
}
