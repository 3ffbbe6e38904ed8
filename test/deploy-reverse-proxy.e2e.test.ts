/**
 * docs/deploy.md "HTTPS", run as written: the settings of "Gantry's own TLS", and those of "Behind a
 * reverse proxy" with its nginx site and its Caddyfile in front, read from the document, for a real
 * Gantry (process runtime) whose pods run test/fixtures/proxy-upstream.mjs. Only what a test machine
 * must change is changed: the listening ports (the document's 443, 8080 and 8081), the certificate
 * files (a CA the test makes), and for Caddy certificates of the test's own in place of ACME. Real nginx and Caddy processes (Debian's packages;
 * CI installs them) and real HTTPS clients that resolve the document's names to loopback; a file
 * skips when its server is not installed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request, type RequestOptions } from 'node:https';
import type { LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { eventually, freePortRange } from './support/eventually.js';
import { startProxyFixture, type ProxiedPod, type ProxyFixture } from './support/proxy-fixture.js';
import type { SshTenant } from './support/ssh-fixture.js';
import { issueCertificate, makeCa } from './support/test-ca.js';
import { openWebSocket } from './support/websocket-client.js';

const freePort = async (): Promise<number> => (await freePortRange(1))[0];
const DOC = readFileSync(join(import.meta.dirname, '..', 'docs', 'deploy.md'), 'utf8');
const section = DOC.slice(DOC.indexOf('### Behind a reverse proxy'));
/** The first fenced block of `lang` in `from` (default: the section "Behind a reverse proxy"). */
const block = (lang: string, from = section): string => {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(from);
  if (!m) throw new Error(`docs/deploy.md "Behind a reverse proxy" has no ${lang} block`);
  return m[1]!;
};
const slug = (name: string): string =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 20);
const which = (cmd: string): string | null => {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
};

/** The client: the document's names resolve to loopback, the test's CA is trusted, and it comes from 127.0.0.2. */
const CLIENT_ADDRESS = '127.0.0.2';
const toLoopback: LookupFunction = (_host, options, cb) => {
  if ((options as { all?: boolean }).all)
    (cb as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
      { address: '127.0.0.1', family: 4 },
    ]);
  else cb(null, '127.0.0.1', 4);
};

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function makeClient(ca: Buffer) {
  const options: RequestOptions = { ca, lookup: toLoopback, localAddress: CLIENT_ADDRESS, agent: false };
  const call = (url: string, init: { method?: string; headers?: Record<string, string>; body?: Buffer } = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const send = url.startsWith('https:') ? request : httpRequest;
      const req = send(url, { ...options, method: init.method ?? 'GET', headers: init.headers ?? {} }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.setTimeout(30_000, () => req.destroy(new Error(`no answer from ${url} in 30 s`)));
      req.end(init.body);
    });
  return { options, call };
}

interface Ports {
  /** where clients connect: the front's port, or Gantry's own listener's with its own TLS */
  front: number;
  main: number;
  proxy: number;
}
interface Front {
  name: string;
  /** null: not installed here (the describe skips) */
  binary: string | null;
  /** Gantry's settings (the document's, with this test's ports and files) and the public URL clients use. */
  configure(
    files: CertFiles,
    ports: Ports,
  ): { server: Record<string, unknown>; proxy: Record<string, unknown>; base: string };
  /** Starts the reverse proxy on `port` in `dir` in front of Gantry's two listeners (none with Gantry's own TLS). */
  start?(dir: string, port: number, files: CertFiles, upstream: { main: number; proxy: number }): Promise<ChildProcess>;
}
interface CertFiles {
  main: { certFile: string; keyFile: string };
  pods: { certFile: string; keyFile: string };
}

/** Resolves once `port` accepts TLS connections, or rejects with the process's output when it exits first. */
async function listening(child: ChildProcess, port: number, output: () => string): Promise<void> {
  let exited = false;
  child.once('exit', () => (exited = true));
  await eventually(
    () => `the reverse proxy to listen on ${port}: ${output().slice(-2000)}`,
    async () => {
      if (exited) throw new Error(`the reverse proxy exited: ${output().slice(-2000)}`);
      const { connect } = await import('node:net');
      return new Promise<boolean | null>((resolve) => {
        const s = connect(port, '127.0.0.1');
        s.once('connect', () => (s.destroy(), resolve(true)));
        s.once('error', () => resolve(null));
      });
    },
    20_000,
  );
}

function spawnLogged(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  let out = '';
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (c) => (out += String(c)));
  child.stderr.on('data', (c) => (out += String(c)));
  return { child, output: () => out };
}

// Gantry's own settings, as the document writes them; only the ports are this test's.
const documented = parseYaml(block('yaml')) as {
  server: { host: string; port: number; publicUrl: string; trustedProxies: string[]; maxConnectionsPerClient: number };
  proxy: { publicUrl: string; domain: string };
};

// "Gantry's own TLS": its settings as the document writes them, with this test's port and files.
const ownTls = parseYaml(block('yaml', DOC.slice(DOC.indexOf("### Gantry's own TLS")))) as {
  server: { host: string; port: number; publicUrl: string; tls: unknown };
  proxy: { domain: string; loadBalancer: { domain: string } };
};
const gantryOwnTls: Front = {
  name: 'Gantry’s own TLS',
  binary: 'gantry',
  configure: (files, ports) => ({
    server: {
      ...ownTls.server,
      host: '127.0.0.1',
      port: ports.front,
      publicUrl: `${ownTls.server.publicUrl}:${ports.front}`,
      tls: { ...files.main, sni: [files.pods] },
    },
    proxy: { ...ownTls.proxy, port: ports.proxy },
    base: `${ownTls.server.publicUrl}:${ports.front}`,
  }),
};

/** Behind a reverse proxy: the document's settings, with the front's port in the public URLs. */
const behindFront = (_files: CertFiles, ports: Ports) => ({
  server: { ...documented.server, port: ports.main, publicUrl: `${documented.server.publicUrl}:${ports.front}` },
  proxy: { ...documented.proxy, port: ports.proxy, publicUrl: `${documented.proxy.publicUrl}:${ports.front}` },
  base: `${documented.server.publicUrl}:${ports.front}`,
});

const nginx: Front = {
  name: 'nginx in front of Gantry',
  configure: behindFront,
  binary: which('nginx') ?? (spawnSync('test', ['-x', '/usr/sbin/nginx']).status === 0 ? '/usr/sbin/nginx' : null),
  async start(dir, port, files, upstream) {
    const site = block('nginx')
      .replaceAll('listen 443 ssl;', `listen 127.0.0.1:${port} ssl;`)
      .replaceAll('/etc/ssl/gantry/fullchain.pem', files.main.certFile)
      .replaceAll('/etc/ssl/gantry/privkey.pem', files.main.keyFile)
      .replaceAll('/etc/ssl/gantry/pods-wildcard.pem', files.pods.certFile)
      .replaceAll('/etc/ssl/gantry/pods-wildcard.key', files.pods.keyFile)
      .replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${upstream.main}`)
      .replaceAll('http://127.0.0.1:8081', `http://127.0.0.1:${upstream.proxy}`);
    // the document's ports, each as a whole number (a random port such as 14433 holds "443")
    assert.ok(!/:8080\b|:8081\b|listen 443\b/.test(site), site);
    const temp = join(dir, 'temp');
    mkdirSync(temp, { recursive: true });
    chmodSync(temp, 0o777);
    const conf = join(dir, 'nginx.conf');
    // the site as Debian's nginx.conf includes it (inside `http`), with a test's own paths
    writeFileSync(
      conf,
      [
        'daemon off;',
        'worker_processes 1;',
        `pid ${join(dir, 'nginx.pid')};`,
        `error_log ${join(dir, 'error.log')} warn;`,
        'events { worker_connections 256; }',
        'http {',
        '  access_log off;',
        ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(temp, t)};`),
        site,
        '}',
      ].join('\n'),
    );
    const { child, output } = spawnLogged(this.binary!, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')]);
    await listening(child, port, () => output() + safeRead(join(dir, 'error.log')));
    return child;
  },
};

const caddy: Front = {
  name: 'Caddy in front of Gantry',
  binary: which('caddy'),
  configure: behindFront,
  async start(dir, port, files, upstream) {
    // The document's Caddyfile gets its certificates by ACME; here each site has the test's own,
    // and the global options keep Caddy off ports 80 and 443 and its admin endpoint.
    const sites = block('caddyfile')
      .replace(/^(gantry\.example\.com) \{\n/m, `$1 {\n    tls ${files.main.certFile} ${files.main.keyFile}\n`)
      .replace(
        /^(pods\.example\.com, \*\.pods\.example\.com) \{\n/m,
        `$1 {\n    tls ${files.pods.certFile} ${files.pods.keyFile}\n`,
      )
      .replaceAll('127.0.0.1:8080', `127.0.0.1:${upstream.main}`)
      .replaceAll('127.0.0.1:8081', `127.0.0.1:${upstream.proxy}`);
    assert.equal((sites.match(/ tls /g) ?? []).length, 2, sites);
    const file = join(dir, 'Caddyfile');
    writeFileSync(
      file,
      `{\n  admin off\n  http_port ${await freePort()}\n  https_port ${port}\n  default_bind 127.0.0.1\n  auto_https disable_redirects\n  skip_install_trust\n}\n${sites}`,
    );
    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true });
    const { child, output } = spawnLogged(this.binary!, ['run', '--config', file, '--adapter', 'caddyfile'], {
      ...process.env,
      HOME: home,
      XDG_DATA_HOME: join(home, 'data'),
      XDG_CONFIG_HOME: join(home, 'config'),
    });
    await listening(child, port, output);
    return child;
  },
};

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

for (const front of [gantryOwnTls, nginx, caddy]) {
  describe(
    `docs/deploy.md’s HTTPS, as written: ${front.name}`,
    { skip: front.binary ? false : `${front.name} is not installed` },
    () => {
      let ca: ReturnType<typeof makeCa>;
      let client: ReturnType<typeof makeClient>;
      let dir: string;
      let f: ProxyFixture;
      let child: ChildProcess | undefined;
      let alice: SshTenant;
      let pod: ProxiedPod;
      let base: string;

      before(async () => {
        ca = makeCa();
        client = makeClient(readFileSync(ca.certFile));
        dir = mkdtempSync(join(tmpdir(), `gantry-front-${slug(front.name)}-`));
        const files: CertFiles = {
          main: issueCertificate(ca, 'main', { dns: ['gantry.example.com'], ips: ['127.0.0.1'] }),
          pods: issueCertificate(ca, 'pods', { dns: ['pods.example.com', '*.pods.example.com', '*.lb.example.com'] }),
        };
        const ports: Ports = { front: await freePort(), main: await freePort(), proxy: await freePort() };
        const settings = front.configure(files, ports);
        base = settings.base;
        // the fixture's own API calls trust the test's CA too (Gantry's own TLS: its listener is HTTPS)
        f = await startProxyFixture(
          { server: settings.server, proxy: settings.proxy },
          {
            fetch: async (url, init) => {
              const res = await client.call(url, {
                ...init,
                body: init.body === undefined ? undefined : Buffer.from(init.body),
              });
              return { status: res.status, text: async () => res.body.toString() };
            },
          },
        );
        child = await front.start?.(dir, ports.front, files, ports);
        alice = await f.tenant(`front-${slug(front.name)}`);
        pod = await f.proxiedPod(alice);
      });
      after(async () => {
        if (child && child.exitCode === null) {
          const gone = new Promise((r) => child!.once('exit', r));
          child.kill('SIGTERM');
          await gone;
        }
        await f?.close();
        if (dir) rmSync(dir, { recursive: true, force: true });
        if (ca) rmSync(ca.dir, { recursive: true, force: true });
      });

      test('the API answers over HTTPS at the documented public URL, and its URLs are that URL', async () => {
        const health = await client.call(`${base}/healthz`);
        assert.equal(health.status, 200, health.body.toString());
        const listed = await client.call(`${base}/v2/pods/${pod.id}`, {
          headers: { authorization: `Bearer ${alice.key}` },
        });
        assert.equal(listed.status, 200, listed.body.toString());
        const url = (JSON.parse(listed.body.toString()) as ProxiedPod).httpProxy[0]!.url;
        assert.match(url, new RegExp(`^https://${pod.id}-8000-[a-z2-7]{20}\\.pods\\.example\\.com:\\d+/$`));
      });

      test('a pod’s page is reached at its https:// name, told the client’s own address and https, without the caller’s key', async () => {
        const res = await client.call(`${pod.httpProxy[0]!.url}echo/x?y=1`, {
          headers: { authorization: `Bearer ${alice.key}`, 'x-forwarded-for': '203.0.113.9' },
        });
        assert.equal(res.status, 200, res.body.toString());
        const seen = JSON.parse(res.body.toString()) as { url: string; headers: Record<string, string> };
        assert.equal(seen.url, '/echo/x?y=1');
        // what the client wrote into X-Forwarded-For is not its address: the front's own view is
        assert.equal(seen.headers['x-forwarded-for'], CLIENT_ADDRESS);
        assert.equal(seen.headers['x-forwarded-proto'], 'https');
        assert.equal(seen.headers.authorization, undefined);
      });

      test('a WebSocket to a pod goes through the front over TLS, both ways', async () => {
        const ws = await openWebSocket(`${pod.httpProxy[0]!.url}ws`, {}, client.options);
        try {
          ws.send('over tls');
          assert.equal(await ws.next(), 'echo: over tls');
          ws.send('x'.repeat(20_000));
          assert.equal(await ws.next(), `echo: ${'x'.repeat(20_000)}`);
        } finally {
          ws.close();
        }
      });

      test('an event stream’s first event reaches the client while the answer is still open', async () => {
        const first = await new Promise<string>((resolve, reject) => {
          const req = request(`${pod.httpProxy[0]!.url}events`, client.options, (res) => {
            res.once('data', (c: Buffer) => {
              resolve(String(c));
              req.destroy();
            });
          });
          req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
          req.setTimeout(15_000, () => req.destroy(new Error('no event in 15 s')));
          req.end();
        });
        assert.match(first, /data: first/);
        await client.call(`${pod.httpProxy[0]!.url}events/next`);
      });

      test('a 20 MB upload reaches the pod whole through the front', async () => {
        const body = Buffer.alloc(20 * 1024 * 1024, 7);
        const res = await client.call(`${pod.httpProxy[0]!.url}count`, { method: 'POST', body });
        assert.equal(res.status, 200, res.body.toString());
        const counted = JSON.parse(res.body.toString()) as { bytes: number; sha256: string };
        assert.equal(counted.bytes, body.length);
        assert.equal(counted.sha256, createHash('sha256').update(body).digest('hex'));
      });
    },
  );
}
