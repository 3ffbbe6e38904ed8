// The web console in a real browser (Debian's Chromium driven by playwright-core) against a real
// `gantry serve` on the process runtime: sign in, create a pod through the form, see it run, read
// its logs, stop it; a read key's write buttons are disabled; the API's validation message shows at
// the field it concerns; the key never leaves the Authorization header.
//
// GANTRY_CONSOLE_SCREENSHOTS=docs/screenshots writes the main pages' screenshots there (README).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { apiCall, assertConsoleBuilt, chromiumContext, chromiumMissing } from './support/chromium.js';
import { runGantry, spawnGantry, type SpawnedGantry } from './support/spawn-gantry.js';
import { eventually } from './support/eventually.js';

const skip = chromiumMissing;
const root = resolve(import.meta.dirname, '..');
const screenshots = process.env.GANTRY_CONSOLE_SCREENSHOTS
  ? resolve(root, process.env.GANTRY_CONSOLE_SCREENSHOTS)
  : null;

const KEY = 'gty_console-e2e-admin-key-0123456789';
const POD_IMAGE = 'console-demo:1';
const POD_LINE = 'hello from the console pod';
const WORKER_IMAGE = 'console-worker:1';
const WORKER_SCRIPT = join(import.meta.dirname, 'fixtures', 'console-worker.ts');

const browserContext = (dir: string, viewport = { width: 1280, height: 900 }): Promise<BrowserContext> =>
  chromiumContext(dir, { viewport });

async function shot(page: Page, name: string): Promise<void> {
  if (screenshots === null) return;
  mkdirSync(screenshots, { recursive: true });
  // let transitions settle (Pico animates colours on focus and hover)
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
}

async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Pods' }).waitFor();
}

const api = (url: string, method: string, path: string, body?: unknown, key = KEY) =>
  apiCall(url, key, method, path, body);

describe('the web console in a browser', { skip }, () => {
  let dir: string;
  let server: SpawnedGantry;
  let readKey: string;
  let context: BrowserContext;
  const seen: { urls: string[]; unauthenticated: string[]; console: string[] } = {
    urls: [],
    unauthenticated: [],
    console: [],
  };

  before(async () => {
    assertConsoleBuilt(root);
    dir = mkdtempSync(join(tmpdir(), 'gantry-console-e2e-'));
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        images: {
          [POD_IMAGE]: {
            command: [
              process.execPath,
              '-e',
              `console.log(${JSON.stringify(POD_LINE)}); setInterval(() => console.log('tick ' + Date.now()), 1000);`,
            ],
            tenantArgs: false,
          },
          // cwd: the repository, so that `--import tsx` resolves
          [WORKER_IMAGE]: { command: [process.execPath, '--import', 'tsx', WORKER_SCRIPT], cwd: root },
        },
        pods: { stopGraceMs: 2000 },
        // a port of its own for the pod HTTP proxy (tests run side by side)
        proxy: { port: 0 },
        serverless: { autoscaler: { intervalMs: 200 } },
        // the paging test holds more pods than one page of the list
        quotas: { pods: 200, gpus: 64 },
      }),
    );
    server = await spawnGantry(['--host', '127.0.0.1', '--data-dir', join(dir, 'data'), '--config', config], {
      GANTRY_BOOTSTRAP_KEY: KEY,
    });
    const created = runGantry([
      'keys',
      'create',
      '--account',
      'admin',
      '--scope',
      'read',
      '--data-dir',
      join(dir, 'data'),
    ]);
    assert.equal(created.status, 0, created.stderr);
    readKey = created.stdout.trim();
    context = await browserContext(dir);
    context.on('request', (request) => {
      seen.urls.push(request.url());
      if (new URL(request.url()).pathname.startsWith('/v2/') && !request.headers().authorization)
        seen.unauthenticated.push(request.url());
    });
    context.on('console', (message) => seen.console.push(message.text()));
  });

  after(async () => {
    await context?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a user signs in, creates a pod through the form, sees it reach RUNNING, reads its logs and stops it', async () => {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(server.url);
    assert.match(page.url(), /\/console\/$/, 'a browser opening the server lands on the console');
    await page.getByLabel('API key').waitFor();
    await shot(page, 'sign-in');
    await signIn(page, server.url, KEY);

    await page.getByRole('button', { name: 'Create pod' }).click();
    await page.getByRole('heading', { name: 'Create a pod' }).waitFor();
    await page.getByRole('textbox', { name: /^Name/ }).fill('console-pod');
    await page.getByRole('textbox', { name: /^Image/ }).fill(POD_IMAGE);
    // The GPU picker: price, stock, data centers and CUDA versions per GPU type, from the catalog.
    const a5000 = page.locator('tr[data-gpu="NVIDIA RTX A5000"]');
    await a5000.waitFor();
    const row = await a5000.innerText();
    assert.match(row, /\$0\.290/, row);
    assert.match(row, /HIGH/, row);
    assert.match(row, /US-CA-2/, row);
    assert.match(row, /12\.1/, row);
    await page.getByRole('radio', { name: /RTX A5000/ }).check();
    await shot(page, 'create-pod');
    await page.getByRole('button', { name: /^Create pod/ }).click();

    // the pod page: the status goes to RUNNING without a reload
    await page.waitForURL(/#\/pods\/(?!new$)[a-z0-9]+$/);
    const podId = decodeURIComponent(page.url().split('/').pop()!);
    const heading = page.getByRole('heading', { level: 1 });
    await eventually(
      async () => `the pod page to show RUNNING (it shows "${await heading.innerText()}")`,
      async () => /RUNNING/.test(await heading.innerText()),
      60_000,
      250,
    );
    // its log stream shows the pod's own output
    const logs = page.getByLabel('Pod logs');
    await eventually(
      async () => `the pod's output in its logs (they show "${await logs.innerText()}")`,
      async () => (await logs.innerText()).includes(POD_LINE),
      30_000,
      250,
    );
    const ssh = await page.getByLabel('SSH command').inputValue();
    assert.match(ssh, /^ssh [a-z0-9]{26}@127\.0\.0\.1 -p \d+$/);
    await eventually(
      'utilization figures on the pod page',
      async () => (await page.getByText('Figures appear while the pod runs.').count()) === 0,
    );
    await shot(page, 'pod');

    // the API agrees, and offers the actions the page offers
    const pod = await api(server.url, 'GET', `/v2/pods/${podId}`);
    assert.equal(pod.body!.status, 'RUNNING');
    assert.equal(
      await page.getByRole('button', { name: 'Start', exact: true }).count(),
      0,
      'a RUNNING pod cannot start',
    );
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await eventually(
      async () => `the pod page to show EXITED (it shows "${await heading.innerText()}")`,
      async () => /EXITED/.test(await heading.innerText()),
      30_000,
      250,
    );
    assert.equal((await api(server.url, 'GET', `/v2/pods/${podId}`)).body!.status, 'EXITED');
    // a stopped pod offers start and terminate, not stop
    await page.getByRole('button', { name: 'Start', exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Stop', exact: true }).count(), 0);

    await page.getByRole('link', { name: 'Pods' }).first().click();
    await page.locator(`tr[data-pod="${podId}"]`).waitFor();
    const listed = await page.locator(`tr[data-pod="${podId}"]`).innerText();
    assert.match(listed, /console-pod\s+EXITED\s+1 × NVIDIA RTX A5000\s+\$0\.000/);
    await shot(page, 'pods');
  });

  test('a user creates an endpoint, runs a job in the playground and sees its output as it arrives', async () => {
    const template = await api(server.url, 'POST', '/v2/templates', {
      name: 'console-worker',
      image: WORKER_IMAGE,
      serverless: true,
    });
    assert.equal(template.status, 201, JSON.stringify(template.body));
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, KEY);
    await page.getByRole('link', { name: 'Serverless' }).click();
    await page.getByRole('heading', { name: 'Serverless endpoints' }).waitFor();
    await page.getByText('New endpoint').click();
    await page.getByRole('textbox', { name: /^Endpoint name/ }).fill('console-echo');
    await page
      .getByRole('combobox', { name: /^Serverless template/ })
      .selectOption({ label: `console-worker (${WORKER_IMAGE})` });
    await page.getByRole('combobox', { name: /^GPU pool/ }).selectOption('ADA_24');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.waitForURL(/#\/serverless\/[A-Za-z0-9]+$/);
    await page.getByRole('heading', { name: 'console-echo' }).waitFor();

    await page.getByLabel('Input (JSON)').fill('{"prompt": "the console"}');
    await page.getByRole('radio', { name: 'stream' }).check();
    await page.getByRole('button', { name: 'Send request' }).click();
    const output = page.getByLabel('Job output');
    const status = page.getByTestId('playground-status');
    // the chunks appear one by one, before the job is done
    const firstSeen = await eventually(
      async () =>
        `the first chunk in the playground (status ${await status.innerText()}, output "${await output.innerText()}")`,
      async () => ((await output.innerText()).includes('"streamed"') ? await status.innerText() : null),
      90_000,
      50,
    );
    await eventually(
      async () => `the job to complete in the playground (status ${await status.innerText()})`,
      async () => (await status.innerText()) === 'COMPLETED',
      30_000,
      100,
    );
    const text = await output.innerText();
    for (const token of ['streamed', 'reply', 'to', 'the console'])
      assert.match(text, new RegExp(`"token": "${token}"`));
    assert.notEqual(firstSeen, 'COMPLETED', 'output was shown while the job still ran');
    // the endpoint page counts it (health), and lists it among the recent jobs
    const recent = page.locator('table.striped');
    await eventually(
      async () =>
        `the completed job in the recent jobs (they show "${await recent.innerText({ timeout: 1000 }).catch(String)}")`,
      async () => (await recent.innerText({ timeout: 1000 }).catch(() => '')).includes('COMPLETED'),
      30_000,
      250,
    );
    await shot(page, 'endpoint');
    await page.close();
  });

  test("a FlashBoot endpoint's page shows its keep time and counts its suspended workers apart from its idle ones", async () => {
    const template = await api(server.url, 'POST', '/v2/templates', {
      name: 'console-flash',
      image: WORKER_IMAGE,
      serverless: true,
    });
    assert.equal(template.status, 201, JSON.stringify(template.body));
    const created = await api(server.url, 'POST', '/v2/serverless', {
      name: 'console-flash',
      type: 'QUEUE',
      templateId: template.body!.id,
      gpu: { pools: ['ADA_24'] },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      workers: { min: 0, max: 1, idleTimeout: 1 },
      flashboot: 'FLASHBOOT',
      flashBootKeepSeconds: 900,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body!.id as string;
    const ran = await api(server.url, 'POST', `/v2/${id}/runsync?wait=90000`, { input: { prompt: 'warm' } });
    assert.equal((ran.body as { status?: string } | null)?.status, 'COMPLETED', JSON.stringify(ran.body));
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, KEY);
    await page.goto(`${server.url}/console/#/serverless/${id}`);
    await page.getByRole('heading', { name: 'console-flash' }).waitFor();
    assert.equal(await page.getByTestId('flashboot-keep').innerText(), '15m 0s', 'its own keep time');
    const count = (k: string) => page.locator(`[data-testid="workers"] [data-count="${k}"] dd`).innerText();
    await eventually(
      async () =>
        `the page to count one suspended worker (suspended ${await count('suspended')}, idle ${await count('idle')})`,
      async () => (await count('suspended')) === '1' && (await count('idle')) === '0',
      60_000,
      250,
    );
    await page.close();
  });

  test("a bad form value shows the API's message at the field it concerns", async () => {
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, KEY);
    await page.goto(`${server.url}/console/#/pods/new`);
    await page.getByRole('textbox', { name: /^Name/ }).fill('bad-ports');
    await page.getByRole('textbox', { name: /^Image/ }).fill(POD_IMAGE);
    await page.getByRole('radio', { name: /RTX A5000/ }).check();
    await page.getByText('Command, disk, ports and environment').click();
    await page.getByLabel('Ports').fill('http-8888');
    await page.getByLabel('Container disk (GB)').fill('0');
    await page.getByRole('button', { name: /^Create pod/ }).click();
    const portsError = page.locator('[data-field-error="pod-ports"]');
    await portsError.waitFor();
    // the API's own words, at the input they concern, and the input marked invalid
    assert.equal(await portsError.innerText(), 'ports.0: must match pattern "^[0-9]{1,5}/[a-z]+$"');
    assert.equal(await page.locator('[data-field-error="pod-disk"]').innerText(), 'disk: must be >= 1');
    assert.equal(await page.getByLabel('Ports').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.getByRole('textbox', { name: /^Name/ }).getAttribute('aria-invalid'), null);
    await shot(page, 'create-pod-errors');
    // nothing was created
    const pods = await api(server.url, 'GET', '/v2/pods');
    assert.ok(!(pods.body!.pods as Array<{ name: string }>).some((p) => p.name === 'bad-ports'));
    await page.close();
  });

  test('the pod page links each HTTP port through the pod HTTP proxy, opening in a new tab without the console as referrer', async () => {
    const created = await api(server.url, 'POST', '/v2/pods', {
      name: 'with-http',
      image: POD_IMAGE,
      gpu: { id: 'NVIDIA RTX A5000' },
      ports: ['8888/http', '22/tcp'],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const httpProxy = created.body!.httpProxy as Array<{ port: number; url: string }>;
    assert.equal(httpProxy.length, 1, JSON.stringify(httpProxy));
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, KEY);
    await page.goto(`${server.url}/console/#/pods/${created.body!.id as string}`);
    const link = page.getByRole('link', { name: 'Open port 8888 (HTTP, through the proxy)' });
    await link.waitFor();
    assert.equal(await link.getAttribute('href'), httpProxy[0]!.url);
    assert.equal(await link.getAttribute('target'), '_blank');
    assert.match(String(await link.getAttribute('rel')), /noreferrer/);
    assert.notEqual(new URL(httpProxy[0]!.url).origin, new URL(server.url).origin, 'never the console’s origin');
    await page.close();
  });

  test("a load-balancing endpoint's page links its address on the proxy listener instead of the job playground", async () => {
    const template = await api(server.url, 'POST', '/v2/templates', {
      name: 'console-lb',
      image: WORKER_IMAGE,
      serverless: true,
    });
    assert.equal(template.status, 201, JSON.stringify(template.body));
    const created = await api(server.url, 'POST', '/v2/serverless', {
      name: 'console-lb',
      type: 'LOAD_BALANCER',
      templateId: template.body!.id,
      gpu: { pools: ['ADA_24'] },
      workers: { min: 0, max: 1 },
      scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const url = created.body!.loadBalancerUrl as string;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/lb\/[a-z0-9]+$/, 'an absolute URL on the proxy listener');
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, KEY);
    await page.goto(`${server.url}/console/#/serverless/${created.body!.id as string}`);
    await page.getByRole('heading', { name: 'console-lb' }).waitFor();
    const link = page.getByTestId('load-balancer-url');
    await link.waitFor();
    assert.equal(await link.getAttribute('href'), url);
    assert.equal(await link.innerText(), url);
    assert.match(String(await link.getAttribute('rel')), /noreferrer/);
    assert.equal(await page.getByRole('button', { name: 'Send request' }).count(), 0, 'no job playground');
    await page.close();
  });

  test('a read key cannot press a write button', async () => {
    const running = await api(server.url, 'POST', '/v2/pods', {
      name: 'read-key-target',
      image: POD_IMAGE,
      gpu: { id: 'NVIDIA RTX A5000' },
    });
    assert.equal(running.status, 201, JSON.stringify(running.body));
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, readKey);
    assert.match(await page.getByRole('navigation', { name: 'Main' }).innerText(), /read-only/);
    assert.equal(await page.getByRole('button', { name: 'Create pod' }).isDisabled(), true);
    await page.goto(`${server.url}/console/#/pods/${running.body!.id as string}`);
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor();
    for (const name of ['Stop', 'Restart', 'Terminate'])
      assert.equal(
        await page.getByRole('button', { name, exact: true }).isDisabled(),
        true,
        `${name} is disabled for a read key`,
      );
    assert.match(
      String(await page.getByRole('button', { name: 'Stop', exact: true }).getAttribute('title')),
      /read-only/,
    );
    // the form too, when reached by its address
    await page.goto(`${server.url}/console/#/pods/new`);
    assert.equal(await page.getByRole('button', { name: /^Create pod/ }).isDisabled(), true);
    // and the resource pages' forms
    await page.goto(`${server.url}/console/#/templates`);
    assert.equal(await page.getByRole('button', { name: 'Create template' }).isDisabled(), true);
    await page.goto(`${server.url}/console/#/ssh-keys`);
    assert.equal(await page.getByRole('button', { name: 'Add key' }).isDisabled(), true);
    await page.close();
  });

  test('a user creates and deletes a template and a network volume through their pages, and the usage page draws a chart', async () => {
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, KEY);

    // a template: a bad disk is refused at its field, then a good one is listed and deleted
    await page.goto(`${server.url}/console/#/templates`);
    const templateForm = page.getByRole('form', { name: 'New template' });
    await templateForm.getByLabel('Name').fill('e2e-template');
    await templateForm.getByLabel('Image').fill(POD_IMAGE);
    await templateForm.getByLabel('Disk (GB)').fill('0');
    await templateForm.getByRole('button', { name: 'Create template' }).click();
    await page.locator('[data-field-error="template-disk"]').waitFor();
    assert.match(await page.locator('[data-field-error="template-disk"]').innerText(), /^disk: must be >= 1/);
    await templateForm.getByLabel('Disk (GB)').fill('15');
    await templateForm.getByRole('button', { name: 'Create template' }).click();
    const templateRow = page.locator('tr[data-template]', { hasText: 'e2e-template' });
    await templateRow.waitFor();
    assert.match(await templateRow.innerText(), /15 GB/);
    const templates = await api(server.url, 'GET', '/v2/templates');
    const made = (templates.body!.templates as Array<{ id: string; name: string; disk: number }>).find(
      (t) => t.name === 'e2e-template',
    );
    assert.equal(made?.disk, 15, 'the API holds the template the form made');
    await shot(page, 'templates');
    await templateRow.getByRole('button', { name: 'Delete template e2e-template' }).click();
    await templateRow.getByRole('button', { name: 'Confirm: delete template e2e-template' }).click();
    await templateRow.waitFor({ state: 'detached' });
    assert.equal((await api(server.url, 'GET', `/v2/templates/${made.id}`)).status, 404);

    // a network volume: the size the API refuses shows at its field; then create and delete
    await page.goto(`${server.url}/console/#/volumes`);
    const volumeForm = page.getByRole('form', { name: 'New network volume' });
    await volumeForm.getByLabel('Name').fill('e2e-volume');
    await volumeForm.getByLabel('Size (GB)').fill('5');
    await volumeForm.getByRole('button', { name: 'Create volume' }).click();
    await page.locator('[data-field-error="volume-size"]').waitFor();
    assert.match(await page.locator('[data-field-error="volume-size"]').innerText(), /^size: must be >= 10/);
    await volumeForm.getByLabel('Size (GB)').fill('20');
    await volumeForm.getByRole('button', { name: 'Create volume' }).click();
    const volumeRow = page.locator('tr[data-volume]', { hasText: 'e2e-volume' });
    await volumeRow.waitFor();
    assert.match(await volumeRow.innerText(), /20 GB/);
    const volumeId = String(await volumeRow.getAttribute('data-volume'));
    assert.equal((await api(server.url, 'GET', `/v2/network-volumes/${volumeId}`)).status, 200);
    await volumeRow.getByRole('button', { name: 'Delete volume e2e-volume' }).click();
    await volumeRow.getByRole('button', { name: 'Confirm: delete volume e2e-volume' }).click();
    await volumeRow.waitFor({ state: 'detached' });
    assert.equal((await api(server.url, 'GET', `/v2/network-volumes/${volumeId}`)).status, 404);

    // usage: spend per day as a uPlot chart (a canvas) with a legend per resource family
    await page.goto(`${server.url}/console/#/usage`);
    const chart = page.locator('[data-usage-chart] canvas');
    await chart.waitFor();
    assert.ok(((await chart.boundingBox())?.width ?? 0) > 300, 'the chart is drawn at the page width');
    const legend = await page.locator('[data-usage-chart] .u-legend').innerText();
    for (const family of ['Pods', 'Serverless', 'Network volumes']) assert.match(legend, new RegExp(family));
    assert.match(await page.locator('[data-usage-total]').innerText(), /^\$[0-9.]+ over the last 30 days$/);
    await shot(page, 'usage');
    await page.close();
  });

  test('a user creates a key on the API keys page, sees its secret once, the key works against the API, and once revoked it stops working', async () => {
    const page = await context.newPage();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await signIn(page, `${server.url}/console/`, KEY);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    // the signed-in key is listed and marked as this one
    await page.locator('tr[data-api-key]', { hasText: '(this key)' }).waitFor();
    const form = page.getByRole('form', { name: 'Create an API key' });
    // the API's refusal of a name shows at the name field
    await form.getByLabel('Name').fill('x'.repeat(101));
    await form.getByRole('button', { name: 'Create key' }).click();
    const nameError = page.locator('[data-field-error="api-key-name"]');
    await nameError.waitFor();
    assert.match(await nameError.innerText(), /^name: must NOT have more than 100 characters/);
    assert.equal(await form.getByLabel('Name').getAttribute('aria-invalid'), 'true');

    await form.getByLabel('Name').fill('e2e deploy key');
    await form.getByLabel('Scope').selectOption('write');
    await form.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByRole('textbox', { name: 'New API key' });
    await shown.waitFor();
    const secret = await shown.inputValue();
    assert.match(secret, /^gty_[A-Za-z0-9]{40}$/);
    assert.match(await page.locator('[data-new-key]').innerText(), /you won’t see it again/);
    await page.locator('[data-new-key]').getByRole('button', { name: 'Copy', exact: true }).click();
    await page.locator('[data-new-key]').getByRole('button', { name: 'Copied', exact: true }).waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret, 'the copy button copied the key');
    await shot(page, 'api-keys');

    // the key works against the API, with the scope it was made with
    const me = await api(server.url, 'GET', '/v2/account', undefined, secret);
    assert.equal(me.status, 200);
    assert.equal(me.body!.key.scope, 'write');
    const row = page.locator(`tr[data-api-key="${me.body!.key.id as string}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), new RegExp(`e2e deploy key\\s+write\\s+${secret.slice(0, 8)}…`));
    assert.ok(!(await row.innerText()).includes(secret.slice(8)), 'the list shows the prefix only');

    // once dismissed, the secret is nowhere on the page, nor after a reload
    await page.getByRole('button', { name: 'Done: I have copied it' }).click();
    await shown.waitFor({ state: 'detached' });
    assert.ok(!(await page.content()).includes(secret));
    await page.reload();
    await row.waitFor();
    assert.ok(!(await page.content()).includes(secret));
    // the key was used above: the list says when (to the minute), where a new key says never
    const lastUsed = (await row.locator('[data-last-used] time').getAttribute('datetime')) ?? '';
    assert.ok(!Number.isNaN(Date.parse(lastUsed)), `last used ${lastUsed}`);

    // revoke asks first, then the key is refused
    await row.getByRole('button', { name: 'Revoke key e2e deploy key' }).click();
    await row.getByRole('button', { name: 'Confirm: revoke key e2e deploy key' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await api(server.url, 'GET', '/v2/account', undefined, secret)).status, 401);
    assert.ok(!server.output().includes(secret), "the server's log never held the new key");

    // a key revoking itself: the confirmation says so, and the tab is signed out
    const own = await api(server.url, 'POST', '/v2/account/api-keys', { name: 'self-revoking', scope: 'write' });
    assert.equal(own.status, 201, JSON.stringify(own.body));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').fill(own.body!.key as string);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const ownRow = page.locator(`tr[data-api-key="${own.body!.id as string}"]`);
    await ownRow.waitFor();
    assert.match(await ownRow.innerText(), /\(this key\)/);
    await ownRow.getByRole('button', { name: 'Revoke key self-revoking' }).click();
    assert.match(await ownRow.innerText(), /signs this tab out/);
    await ownRow.getByRole('button', { name: 'Confirm: revoke key self-revoking' }).click();
    await page.getByText('The server no longer accepts this key').waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('gantry.apiKey')"), null);
    await page.close();
  });

  test('a read key sees the API keys page with its create and revoke controls disabled', async () => {
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, readKey);
    await page.goto(`${server.url}/console/#/api-keys`);
    const rows = page.locator('tr[data-api-key]');
    await rows.first().waitFor();
    assert.ok((await rows.count()) >= 2, 'a read key lists the keys');
    assert.equal(await page.getByRole('button', { name: 'Create key' }).isDisabled(), true);
    const revokes = page.getByRole('button', { name: /^Revoke key / });
    assert.equal(await revokes.count(), await rows.count());
    for (const button of await revokes.all()) {
      assert.equal(await button.isDisabled(), true);
      assert.match(String(await button.getAttribute('title')), /read-only/);
    }
    await page.close();
  });

  test('the pods list shows 50 pods a page from the server: Next shows the next page of rows, a search narrows them, and neither the load nor the poll fetches the whole list', async () => {
    // 48 CPU pods fill the demo fleet's CPU hosts (2 vCPU each); 6 one-GPU pods make a second page
    const made: string[] = [];
    const make = async (body: Record<string, unknown>) => {
      const res = await api(server.url, 'POST', '/v2/pods', { image: 'placeholder:1', ...body });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      made.push(res.body!.id as string);
    };
    try {
      for (let i = 0; i < 48; i++)
        await make({
          name: `page-pod-${String(i).padStart(2, '0')}`,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          cloud: i < 32 ? 'SECURE' : 'COMMUNITY',
        });
      for (let i = 48; i < 54; i++) await make({ name: `page-pod-${i}`, gpu: { id: 'NVIDIA GeForce RTX 4090' } });
      const firstPage = (await api(server.url, 'GET', '/v2/pods?limit=50&offset=0&sort=created&order=desc')).body!;
      const secondPage = (await api(server.url, 'GET', '/v2/pods?limit=50&offset=50&sort=created&order=desc')).body!;
      const total = (await api(server.url, 'GET', '/v2/pods')).body!.pods.length as number;
      assert.ok(total > 50 && total <= 100, `${total} pods: two pages`);
      const ids = (body: Record<string, any>) => (body.pods as Array<{ id: string }>).map((p) => p.id);

      const page = await context.newPage();
      const podCalls: string[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).pathname === '/v2/pods' && r.method() === 'GET') podCalls.push(r.url());
      });
      await signIn(page, `${server.url}/console/`, KEY);
      const range = page.locator('[data-page-range]');
      const table = page.locator('table[data-list-page]');
      const rows = async () =>
        page.locator('tbody tr[data-pod]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-pod')));
      await eventually(
        async () => `the first page (range "${await range.innerText().catch(() => '')}")`,
        async () => (await range.innerText().catch(() => '')) === `1–50 of ${total}`,
        10_000,
        100,
      );
      assert.match(
        await page.locator('[data-pod-count]').innerText(),
        new RegExp(`^${total} pods · \\d+ running · \\$`),
      );
      assert.deepEqual(await rows(), ids(firstPage), 'page 1: the 50 newest pods, newest first');

      await page.getByRole('button', { name: 'Next' }).click();
      await page.locator('table[data-list-page="1"]:not([aria-busy])').waitFor();
      assert.equal(await range.innerText(), `51–${total} of ${total}`);
      const second = await rows();
      assert.deepEqual(second, ids(secondPage), 'page 2: the rows after the first 50');
      assert.ok(!second.some((id) => ids(firstPage).includes(id)), 'no pod on both pages');
      assert.equal(await table.getAttribute('data-list-page'), '1');

      // the poll refreshes the page shown, and only it
      const secondCalls = () => podCalls.filter((u) => new URL(u).searchParams.get('offset') === '50').length;
      await eventually(
        async () => `a poll of page 2 (${secondCalls()} calls so far)`,
        async () => secondCalls() >= 2,
        10_000,
        200,
      );
      assert.ok(podCalls.length >= 3);
      for (const url of podCalls)
        assert.equal(new URL(url).searchParams.get('limit'), '50', `${url} asks for one page`);

      // pods go away while page 2 is shown: its next poll finds the page past the end, and the
      // list moves back to the last page there is
      const gone = made.splice(made.length - 10, 10);
      for (const id of gone) assert.equal((await api(server.url, 'DELETE', `/v2/pods/${id}`)).status, 204);
      await eventually(
        async () => `the list back on page 1 of ${total - 10} (range "${await range.innerText()}")`,
        async () => (await range.innerText()) === `1–${total - 10} of ${total - 10}`,
        15_000,
        200,
      );
      assert.equal(await table.getAttribute('data-list-page'), '0');
      assert.equal((await rows()).length, total - 10);

      // a search is answered by the server: one matching pod, on page 1 again
      await page.getByRole('searchbox', { name: 'Filter pods' }).fill('page-pod-07');
      await eventually(
        async () => `the search's page (range "${await range.innerText()}")`,
        async () => (await range.innerText()) === '1–1 of 1',
        10_000,
        100,
      );
      assert.match(await page.locator('[data-pod-count]').innerText(), /^1 pod matches/);
      assert.equal((await rows()).length, 1);
      assert.match(await page.locator('tbody tr[data-pod]').innerText(), /page-pod-07/);
      assert.ok(podCalls.some((u) => new URL(u).searchParams.get('search') === 'page-pod-07'));
      await page.close();
    } finally {
      for (const id of made) await api(server.url, 'DELETE', `/v2/pods/${id}`);
    }
  });

  test('a stored key the server refuses when the page opens signs the tab out, saying why', async () => {
    const page = await context.newPage();
    // as after a sign-in with a key revoked since: the calls started before the first render are refused
    await page.goto(`${server.url}/console/#/pods`);
    await page.evaluate("sessionStorage.setItem('gantry.apiKey', 'gty_revoked-0123456789abcdef0123')");
    await page.reload();
    await page.getByLabel('API key').waitFor();
    assert.match(await page.locator('#api-key-help').innerText(), /no longer accepts this key/);
    assert.equal(await page.evaluate("sessionStorage.getItem('gantry.apiKey')"), null);
    // signing in again shows the pods, never the refusal of the call made with the old key
    await page.evaluate(
      "new MutationObserver(() => { if (document.querySelector('[role=alert]')) window.__alerted = true; }).observe(document.body, { childList: true, subtree: true })",
    );
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('[data-pod-count], p:text("No pods yet.")').first().waitFor();
    assert.equal(await page.evaluate('window.__alerted === true'), false, 'no problem shown on the pods page');
    await page.close();
  });

  test('the key is kept in session storage only: never in a URL, a log line or local storage, and every API call carries it in Authorization', async () => {
    const page = await context.newPage();
    await signIn(page, `${server.url}/console/`, KEY);
    assert.equal(await page.evaluate('JSON.stringify(localStorage)'), '{}');
    assert.equal(await page.evaluate("sessionStorage.getItem('gantry.apiKey')"), KEY);
    assert.ok(seen.urls.length > 10);
    for (const secret of [KEY, readKey]) {
      assert.ok(!seen.urls.some((u) => u.includes(secret)), 'no request URL holds a key');
      assert.ok(!seen.console.some((m) => m.includes(secret)), 'no console message holds a key');
    }
    assert.ok(!server.output().includes(readKey), "the server's log holds no key it was sent");
    assert.deepEqual(seen.unauthenticated, [], 'every API call sends the key');
    // signing out forgets it
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('gantry.apiKey')"), null);
    await page.close();
  });
});
