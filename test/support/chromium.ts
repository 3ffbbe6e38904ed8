// Debian's Chromium driven by playwright-core, as every browser test and the console bench run it
// (no browser download works here: `apt-get install chromium`, or set GANTRY_CHROMIUM).
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

const CHROMIUM = process.env.GANTRY_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser tests are skipped here, or false when a Chromium is installed. */
export const chromiumMissing: string | false = existsSync(CHROMIUM)
  ? false
  : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set GANTRY_CHROMIUM): the console's browser tests need one`;

/** Headless, no sandbox (containers), and nothing that reaches the network on its own. */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A browser with a fresh temporary profile of its own. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });

/** A fresh profile under `dir` per context: nothing carries over between the users a test plays. */
export const chromiumContext = (
  dir: string,
  options: Omit<Parameters<typeof chromium.launchPersistentContext>[1], 'executablePath' | 'headless' | 'args'> = {},
): Promise<BrowserContext> =>
  chromium.launchPersistentContext(mkdtempSync(join(dir, 'profile-')), {
    ...options,
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
  });

/** Fails the console's browser tests at once, saying what to run, when `dist/console` was not built. */
export function assertConsoleBuilt(root: string): void {
  if (!existsSync(join(root, 'dist', 'console', 'index.html')))
    throw new Error('dist/console is missing: run `npm run build` (it runs vite build) before the browser tests');
}

/** A REST call with `key`, as the tests set up what the console then shows: status and JSON body. */
export async function apiCall(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, any> | null }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: res.status === 204 ? null : ((await res.json()) as Record<string, any>) };
}
