// The web console at a phone's width (390 × 844, an iPhone 12 to 15) in a real browser (Debian's
// Chromium driven by playwright-core) against a real `gantry serve` on the process runtime: every
// main page fits the screen (no page-level horizontal scroll; wide tables scroll inside their own
// box), the navigation reaches every page, and the keyboard alone signs in and follows the nav.
//
// GANTRY_CONSOLE_SCREENSHOTS=docs/screenshots writes the phone screenshots there (README).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { apiCall, assertConsoleBuilt, chromiumContext, chromiumMissing } from './support/chromium.js';
import { spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { eventually } from './support/eventually.js';

const skip = chromiumMissing;
const root = resolve(import.meta.dirname, '..');
const screenshots = process.env.GANTRY_CONSOLE_SCREENSHOTS
  ? resolve(root, process.env.GANTRY_CONSOLE_SCREENSHOTS)
  : null;

const KEY = 'gty_console-phone-admin-key-0123456789';
const POD_IMAGE = 'console-phone-demo:1';
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
/** The main navigation's links and the heading of the page each one opens. */
const NAV: Array<[string, string]> = [
  ['Pods', 'Pods'],
  ['Serverless', 'Serverless endpoints'],
  ['Templates', 'Templates'],
  ['Volumes', 'Network volumes'],
  ['Registries', 'Registry credentials'],
  ['SSH keys', 'SSH keys'],
  ['API keys', 'API keys'],
  ['Usage', 'Usage'],
];

/** A phone (a mobile viewport, touch, a 2× screen), or with `desktop` a 1280 px window. */
const browserContext = (dir: string, desktop = false): Promise<BrowserContext> =>
  chromiumContext(
    dir,
    desktop ? { viewport: DESKTOP } : { viewport: PHONE, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
  );

async function shot(page: Page, name: string): Promise<void> {
  if (screenshots === null) return;
  mkdirSync(screenshots, { recursive: true });
  await page.waitForTimeout(300);
  // the screen as the phone shows it, not the whole page
  await page.screenshot({ path: join(screenshots, `${name}.png`) });
}

const api = async (url: string, method: string, path: string, body?: unknown) => {
  const res = await apiCall(url, KEY, method, path, body);
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body!;
};

/**
 * The page's width and the window's, and the elements that stick out past the screen's width
 * outside a box that scrolls sideways by itself. (Browser-side code as text: the tests compile
 * without the DOM's types.)
 */
const overflow = (page: Page, screen = PHONE.width) =>
  page.evaluate<{ scrollWidth: number; innerWidth: number; out: string[] }>(`(() => {
    const width = ${screen};
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.right <= width + 0.5) continue;
      let scroller = el.parentElement;
      while (scroller && scroller !== document.body && getComputedStyle(scroller).overflowX === 'visible')
        scroller = scroller.parentElement;
      if (scroller && scroller !== document.body && scroller.getBoundingClientRect().right <= width + 0.5) continue;
      out.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '') + ' (right ' + Math.round(box.right) + ')');
    }
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, out: out.slice(0, 8) };
  })()`);

/** The page does not scroll sideways at the phone's width (what sticks out is named when it does). */
async function fits(page: Page, what: string, screen = PHONE.width): Promise<void> {
  const o = await overflow(page, screen);
  // a phone's browser zooms out (a wider window) rather than scroll sideways: that fails too
  assert.equal(o.innerWidth, screen, `${what}: the browser zoomed out to fit something wide (${JSON.stringify(o)})`);
  assert.ok(o.scrollWidth <= o.innerWidth, `${what}: the page scrolls sideways (${JSON.stringify(o)})`);
}

describe('the web console at a phone’s width', { skip }, () => {
  let dir: string;
  let server: SpawnedGantry;
  let context: BrowserContext;
  let podId: string;
  let endpointId: string;

  before(async () => {
    assertConsoleBuilt(root);
    dir = mkdtempSync(join(tmpdir(), 'gantry-console-phone-'));
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        images: {
          [POD_IMAGE]: {
            command: [
              process.execPath,
              '-e',
              "console.log('a long line from the pod that is wider than a phone: ' + 'x'.repeat(200)); setInterval(() => {}, 1000);",
            ],
            tenantArgs: false,
          },
        },
        pods: { stopGraceMs: 1000 },
      }),
    );
    server = await spawnGantry(['--host', '127.0.0.1', '--data-dir', join(dir, 'data'), '--config', config], {
      GANTRY_BOOTSTRAP_KEY: KEY,
    });
    // something on every page, with the long names and ids real accounts have
    const pod = await api(server.url, 'POST', '/v2/pods', {
      name: 'a-pod-with-a-rather-long-name-for-a-phone',
      image: POD_IMAGE,
      gpu: { id: 'NVIDIA RTX A5000' },
      ports: ['8888/http', '22/tcp'],
      startSsh: true,
    });
    podId = pod.id as string;
    const template = await api(server.url, 'POST', '/v2/templates', {
      name: 'a-serverless-template-with-a-long-name',
      image: 'registry.example.com/team/worker-image-with-a-long-name:2024.11.26',
      serverless: true,
    });
    const endpoint = await api(server.url, 'POST', '/v2/serverless', {
      name: 'an-endpoint-with-a-long-name',
      templateId: template.id,
      type: 'QUEUE',
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      workers: { min: 0, max: 2 },
    });
    endpointId = endpoint.id as string;
    await api(server.url, 'POST', '/v2/network-volumes', {
      name: 'a-network-volume-with-a-long-name',
      size: 20,
      dataCenter: 'US-TX-3',
    });
    await api(server.url, 'POST', '/v2/registries', {
      name: 'a-registry-credential-with-a-long-name',
      username: 'someone',
      password: 'secret-password',
    });
    await api(server.url, 'PUT', '/v2/account/ssh-keys', {
      keys: [`ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${'A'.repeat(43)} someone@a-laptop-with-a-long-hostname`],
    });
    context = await browserContext(dir);
  });

  after(async () => {
    await context?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('at 390 px every main page fits the screen and the navigation reaches each of them', async (t) => {
    const page = await context.newPage();
    await page.goto(`${server.url}/console/`);
    await page.getByLabel('API key').waitFor();
    await fits(page, 'sign in');
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Pods', level: 1 }).waitFor();
    await page.locator(`tr[data-pod="${podId}"]`).waitFor();
    // the check itself sees a page that is too wide
    await page.evaluate(`(() => {
      const wide = document.createElement('div');
      wide.id = 'too-wide';
      wide.style.width = '600px';
      wide.textContent = 'wide';
      document.querySelector('main').append(wide);
    })()`);
    await assert.rejects(fits(page, 'a page with a 600 px block'), /zoomed out|scrolls sideways/);
    await page.evaluate(`document.getElementById('too-wide').remove()`);
    await eventually('the page to fit again', async () => (await overflow(page)).innerWidth === PHONE.width);
    const nav = page.getByRole('navigation', { name: 'Main' });
    // the top bar leaves most of the screen to the page
    const bar = (await page.locator('header.topbar').boundingBox())!;
    t.diagnostic(`top bar: ${Math.round(bar.height)} px of ${PHONE.height}`);
    assert.ok(bar.height <= 140, `the top bar is ${bar.height} px tall`);
    for (const [link, heading] of NAV) {
      await nav.getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      await fits(page, link);
      if (link === 'Pods') await shot(page, 'pods-phone');
      if (link === 'Templates') {
        // a row's button at the far end of a wide table: scrolled to inside the table, not under its first column
        const remove = page.getByRole('button', { name: 'Delete template a-serverless-template-with-a-long-name' });
        await remove.scrollIntoViewIfNeeded();
        const b = (await remove.boundingBox())!;
        assert.ok(b.x >= 0 && b.x + b.width <= PHONE.width, `the delete button is on the screen: ${JSON.stringify(b)}`);
        const hit = await page.evaluate<string>(
          `(() => { const el = document.elementFromPoint(${b.x + b.width / 2}, ${b.y + b.height / 2}); return el ? el.closest('button')?.getAttribute('aria-label') ?? el.tagName : ''; })()`,
        );
        assert.equal(hit, 'Delete template a-serverless-template-with-a-long-name', 'nothing covers it');
        await fits(page, 'Templates, its table scrolled');
      }
    }
    // the form to create a pod, with its GPU table
    await nav.getByRole('link', { name: 'Pods', exact: true }).click();
    await page.getByRole('button', { name: 'Create pod' }).click();
    await page.getByRole('heading', { name: 'Create a pod', level: 1 }).waitFor();
    await page.locator('tr[data-gpu="NVIDIA RTX A5000"]').waitFor();
    await fits(page, 'Create a pod');
    const submit = page.getByRole('button', { name: /^Create pod/ });
    const box = (await submit.boundingBox())!;
    assert.ok(
      box.x >= 0 && box.x + box.width <= PHONE.width,
      `the submit button is on the screen: ${JSON.stringify(box)}`,
    );
    await page.locator('tr[data-gpu="NVIDIA RTX A5000"]').scrollIntoViewIfNeeded();
    await shot(page, 'create-pod-phone');
    // a pod's page and an endpoint's page, reached from their lists
    await nav.getByRole('link', { name: 'Pods', exact: true }).click();
    await page.locator(`tr[data-pod="${podId}"] a`).first().click();
    await page.getByRole('heading', { name: /RUNNING/, level: 1 }).waitFor({ timeout: 60_000 });
    const logs = page.getByLabel('Pod logs');
    await eventually(
      async () => `the pod's long log line (the logs show "${await logs.innerText()}")`,
      async () => (await logs.innerText()).includes('xxxx'),
      60_000,
      250,
    );
    await fits(page, 'a pod');
    await shot(page, 'pod-phone');
    await nav.getByRole('link', { name: 'Serverless', exact: true }).click();
    await page.locator(`a[href="#/serverless/${endpointId}"]`).first().click();
    await page.getByRole('heading', { name: 'an-endpoint-with-a-long-name', level: 1 }).waitFor();
    await page.waitForLoadState('networkidle');
    await fits(page, 'an endpoint');
    await shot(page, 'endpoint-phone');
    await page.close();
  });

  test('with the keyboard alone a user signs in, skips to the content, and follows each link of the navigation', async () => {
    const page = await context.newPage();
    await page.goto(`${server.url}/console/`);
    await page.getByLabel('API key').waitFor();
    const focused = () =>
      page.evaluate<{ tag: string; id: string; text: string; ring: boolean }>(`(() => {
        const el = document.activeElement;
        const style = el ? getComputedStyle(el) : null;
        return {
          tag: el ? el.tagName.toLowerCase() : '',
          id: el ? el.id : '',
          text: el ? (el.textContent || '').trim() : '',
          ring: style !== null && style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
        };
      })()`);
    /** Presses Tab until `match` is focused (at most `max` times); answers how many it took. */
    const tabTo = async (what: string, match: (f: Awaited<ReturnType<typeof focused>>) => boolean, max = 20) => {
      const path: string[] = [];
      for (let i = 1; i <= max; i++) {
        await page.keyboard.press('Tab');
        const f = await focused();
        path.push(`${f.tag}#${f.id}:${f.text.slice(0, 20)}`);
        if (match(f)) {
          assert.ok(f.ring, `${what} shows that it has the focus`);
          return i;
        }
      }
      assert.fail(`Tab never reached ${what}: ${path.join(' → ')}`);
    };
    assert.equal(await tabTo('the API key field', (f) => f.id === 'api-key'), 1, 'the field is the first stop');
    await page.keyboard.type(KEY);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Pods', level: 1 }).waitFor();

    // after a reload (still signed in: the tab keeps the key), the first stop skips the navigation
    await page.reload();
    await page.getByRole('heading', { name: 'Pods', level: 1 }).waitFor();
    assert.equal(await tabTo('the skip link', (f) => f.text === 'Skip to content'), 1);
    await page.keyboard.press('Enter');
    assert.equal((await focused()).id, 'main');
    await tabTo('the first control of the page', (f) => f.text === 'Create pod', 1);

    for (const [link, heading] of [...NAV.slice(1), NAV[0]!]) {
      // from the top of the page
      await page.reload();
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await tabTo(`the ${link} link`, (f) => f.tag === 'a' && f.text === link);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      assert.equal(
        await page
          .getByRole('navigation', { name: 'Main' })
          .getByRole('link', { name: link, exact: true })
          .getAttribute('aria-current'),
        'page',
        `${link} is marked as the current page`,
      );
    }
    await page.close();
  });

  test('at 1280 px the same pages fit and the navigation is one row beside the brand', async () => {
    const desktop = await browserContext(dir, true);
    try {
      const page = await desktop.newPage();
      await page.goto(`${server.url}/console/`);
      await page.getByLabel('API key').fill(KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Pods', level: 1 }).waitFor();
      const nav = page.getByRole('navigation', { name: 'Main' });
      const tops = await Promise.all(
        [
          page.getByRole('link', { name: 'Gantry' }),
          ...NAV.map(([link]) => nav.getByRole('link', { name: link, exact: true })),
        ].map(async (l) => Math.round((await l.boundingBox())!.y)),
      );
      assert.equal(new Set(tops).size, 1, `the brand and the links on one row: ${tops.join(', ')}`);
      for (const [link, heading] of NAV) {
        await nav.getByRole('link', { name: link, exact: true }).click();
        await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
        await fits(page, `${link} at 1280 px`, DESKTOP.width);
      }
    } finally {
      await desktop.close();
    }
  });
});
