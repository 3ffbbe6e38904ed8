/**
 * `server.tls`: the main, job and pod-proxy listeners serve HTTPS with certificates a test-made CA
 * signed (test/support/test-ca.ts), the wildcard names of the proxy's and the load balancer's
 * domains get their own certificate by SNI, a reload (what SIGHUP does) swaps the certificates for
 * new connections while an open one goes on, and a file that cannot be used keeps the old ones.
 * Real listeners, real TLS clients verifying against the CA.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import https from 'node:https';
import { connect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ServerCertificates } from '../src/http/tls-certificates.js';
import { startListeningServer, type ListeningServer } from './support/harness.js';
import { issueCertificate, makeCa, type CertificateFiles } from './support/test-ca.js';
import { httpCaller } from '../src/worker/http-call.js';

const ca = makeCa();
const caPem = readFileSync(ca.certFile);
const main = issueCertificate(ca, 'main', { dns: ['localhost'], ips: ['127.0.0.1'] });
const wildcard = issueCertificate(ca, 'wildcard', { dns: ['*.pods.gantry.test', '*.lb.gantry.test'] });
/** The files the server reads: the main certificate is copied in, so a test can replace them. */
const served: CertificateFiles = { certFile: join(ca.dir, 'served.pem'), keyFile: join(ca.dir, 'served.key') };
copyFileSync(main.certFile, served.certFile);
copyFileSync(main.keyFile, served.keyFile);
const fingerprintOf = (file: string): string => new X509Certificate(readFileSync(file)).fingerprint256;

let listening: ListeningServer;
before(async () => {
  listening = await startListeningServer({
    server: { jobPort: 0, tls: { ...served, sni: [wildcard] } },
    proxy: { domain: 'pods.gantry.test', loadBalancer: { domain: 'lb.gantry.test' } },
  });
});
after(async () => {
  await listening?.close();
  rmSync(ca.dir, { recursive: true, force: true });
});

/** The certificate a new TLS connection to `url` is shown (verified against the CA for `servername`). */
function peerOf(url: string, servername?: string): Promise<PeerCertificate> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: hostname, port: Number(port), ca: caPem, ...(servername ? { servername } : {}) },
      () => {
        const cert = socket.getPeerCertificate();
        socket.end();
        resolve(cert);
      },
    );
    socket.once('error', reject);
  });
}

/** GET over HTTPS trusting the CA; answers the status, the body and the socket it came on. */
function get(
  url: string,
  agent: https.Agent,
): Promise<{ status: number; body: string; socket: TLSSocket; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { agent }, (res) => {
      const socket = res.socket as TLSSocket;
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, socket, fingerprint }));
    });
    req.once('error', reject);
  });
}

describe('HTTPS on the listeners (server.tls)', () => {
  test('the main, job and pod-proxy listeners speak HTTPS, and the URLs Gantry derives start with https://', async () => {
    const { server } = listening;
    const proxyUrl = server.proxy!.url;
    for (const url of [server.url, server.jobUrl!, proxyUrl]) assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const { config } = server.services;
    assert.match(config.server.publicUrl, /^https:\/\//);
    assert.match(config.server.publicJobUrl, /^https:\/\//);
    assert.match(config.proxy.publicUrl, /^https:\/\//);
    const agent = new https.Agent({ ca: caPem });
    assert.equal((await get(`${server.url}/healthz`, agent)).status, 200);
    assert.equal((await get(`${server.jobUrl}/healthz`, agent)).status, 200);
    const proxied = await get(`${proxyUrl}/`, agent);
    assert.match(proxied.body, /pod HTTP proxy/);
    agent.destroy();
    // plain HTTP on the HTTPS port is not served
    const plain = await new Promise<string>((resolve) => {
      const req = httpRequest(`${server.url.replace('https:', 'http:')}/healthz`, (res) =>
        resolve(`answered ${res.statusCode}`),
      );
      req.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end();
    });
    assert.notEqual(plain, 'answered 200');
  });

  test("the proxy's and load balancer's wildcard names get the SNI certificate; other names and bare addresses get the main one", async () => {
    const proxyUrl = listening.server.proxy!.url;
    const pod = await peerOf(proxyUrl, 'abcdef-8888-token.pods.gantry.test');
    assert.equal(pod.fingerprint256, fingerprintOf(wildcard.certFile));
    const lb = await peerOf(proxyUrl, 'ep123.lb.gantry.test');
    assert.equal(lb.fingerprint256, fingerprintOf(wildcard.certFile));
    assert.equal((await peerOf(listening.server.url)).fingerprint256, fingerprintOf(main.certFile));
    assert.equal((await peerOf(listening.server.url, 'localhost')).fingerprint256, fingerprintOf(main.certFile));
    // a name no certificate covers gets the main one, which the client then refuses for that name
    await assert.rejects(peerOf(proxyUrl, 'other.example'), /does not match|altnames/i);
  });

  test('the worker library trusts GANTRY_CA_FILE besides the system, and refuses the certificate without it', async () => {
    const trusting = httpCaller({ GANTRY_CA_FILE: ca.certFile });
    assert.equal((await trusting.call(`${listening.server.jobUrl}/healthz`)).status, 200);
    trusting.close();
    const plain = httpCaller({});
    await assert.rejects(plain.call(`${listening.server.jobUrl}/healthz`), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    plain.close();
    assert.throws(
      () => httpCaller({ GANTRY_CA_FILE: join(ca.dir, 'missing.pem') }),
      /GANTRY_CA_FILE .*missing\.pem cannot be read: ENOENT/,
    );
  });

  test('a reload swaps the certificate for new connections while an open connection goes on; a bad file keeps the one served', async () => {
    const { server } = listening;
    const before = fingerprintOf(served.certFile);
    const agent = new https.Agent({ ca: caPem, keepAlive: true, maxSockets: 1 });
    const first = await get(`${server.url}/healthz`, agent);
    assert.equal(first.fingerprint, before);

    const renewed = issueCertificate(ca, 'renewed', { dns: ['localhost'], ips: ['127.0.0.1'] });
    copyFileSync(renewed.certFile, served.certFile);
    copyFileSync(renewed.keyFile, served.keyFile);
    const outcome = server.reloadCertificates();
    assert.ok(outcome?.ok, JSON.stringify(outcome));

    const again = await get(`${server.url}/healthz`, agent);
    assert.equal(again.status, 200);
    assert.equal(again.socket, first.socket, 'the open connection carried the next request');
    assert.equal(again.fingerprint, before, 'with the certificate it was made with');
    for (const url of [server.url, server.jobUrl!, server.proxy!.url])
      assert.equal((await peerOf(url)).fingerprint256, fingerprintOf(renewed.certFile), `a new connection to ${url}`);
    agent.destroy();

    // a half-written renewal: the certificate file replaced, the key not matching it
    copyFileSync(wildcard.certFile, served.certFile);
    const refused = server.reloadCertificates();
    assert.ok(refused && !refused.ok);
    assert.match(refused.error, /is not the key of the certificate/);
    writeFileSync(served.certFile, 'not a certificate');
    const garbage = server.reloadCertificates();
    assert.ok(garbage && !garbage.ok);
    assert.match(garbage.error, /holds no PEM certificate/);
    assert.equal(
      (await peerOf(server.url)).fingerprint256,
      fingerprintOf(renewed.certFile),
      'the last good one is served',
    );
    const still = new https.Agent({ ca: caPem });
    assert.equal((await get(`${server.url}/healthz`, still)).status, 200);
    still.destroy();
    copyFileSync(renewed.certFile, served.certFile);
  });
});

test("docs/deploy.md's openssl commands make a CA and a certificate Gantry serves, covering the wildcard names", () => {
  const docs = readFileSync(join(import.meta.dirname, '..', 'docs', 'deploy.md'), 'utf8');
  const block = /A certificate for a test[\s\S]*?```sh\n([\s\S]+?)```/.exec(docs)?.[1];
  assert.ok(block, 'the section holds the commands');
  const dir = mkdtempSync(join(tmpdir(), 'gantry-docs-ca-'));
  try {
    execFileSync('bash', ['-euc', block], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    const cert = new X509Certificate(readFileSync(join(dir, 'gantry.pem')));
    const issuer = new X509Certificate(readFileSync(join(dir, 'ca.pem')));
    assert.ok(cert.verify(issuer.publicKey), 'signed by the CA');
    for (const name of ['gantry.example.com', 'abc-80-t.pods.example.com', 'ep1.lb.example.com'])
      assert.ok(cert.checkHost(name), name);
    const certificates = new ServerCertificates({
      main: { certFile: join(dir, 'gantry.pem'), keyFile: join(dir, 'gantry.key') },
      sni: [],
    });
    assert.equal(certificates.certificates[0]!.fingerprint, cert.fingerprint256);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
