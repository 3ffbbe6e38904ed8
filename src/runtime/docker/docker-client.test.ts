import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createConnection, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import {
  DOCKER_HOST,
  dockerEngine,
  makeDockerRuntime,
  noEngine,
  uniqueNamespace,
} from '../../../test/support/docker.js';
import { instanceSpec } from '../runtime-contract.js';
import { canonicalImage, registryOfImage } from '../../domain/image-ref.js';
import { DockerClient } from './docker-client.js';
import { registryAuthHeader } from './engine-images.js';
import { parseDockerHost } from './engine-connection.js';
import { privateImageVolumeName } from './private-image-ledger.js';
import type { EngineEvent } from './engine-types.js';

// Awaited before any test is declared: a test declared earlier would let the file's root after hooks run before the later ones.
const engine = await dockerEngine();

describe('registry credentials and engine addresses', () => {
  test('X-Registry-Auth is padded base64url JSON of the username, password and server', () => {
    const header = registryAuthHeader({ username: 'u', password: 'p?>~' }, 'ghcr.io');
    assert.doesNotMatch(header, /[+/]/);
    assert.equal(header.length % 4, 0);
    assert.deepEqual(JSON.parse(Buffer.from(header, 'base64url').toString()), {
      username: 'u',
      password: 'p?>~',
      serveraddress: 'ghcr.io',
    });
  });

  test('DOCKER_HOST is a unix socket or a tcp address; anything else is refused clearly', () => {
    assert.deepEqual(parseDockerHost('unix:///var/run/docker.sock'), { socketPath: '/var/run/docker.sock' });
    assert.deepEqual(parseDockerHost('tcp://10.0.0.2:2375'), { host: '10.0.0.2', port: 2375 });
    assert.deepEqual(parseDockerHost('tcp://[::1]:2376'), { host: '::1', port: 2376 });
    assert.throws(() => parseDockerHost('ssh://host'), /neither unix:\/\/\/path nor tcp:\/\/host:port/);
    assert.throws(() => parseDockerHost('unix://relative.sock'), /absolute socket path/);
  });

  test('an address nothing listens at fails fast with a clear message', async () => {
    const client = new DockerClient({ dockerHost: 'tcp://127.0.0.1:9' });
    await assert.rejects(
      client.ping(),
      /the Docker Engine at tcp:\/\/127\.0\.0\.1:9 is unreachable: connect ECONNREFUSED/,
    );
    client.close();
  });

  test('an engine that does not answer in time fails with what was being done', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const client = new DockerClient({
      dockerHost: `tcp://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      timeoutMs: 200,
    });
    try {
      await assert.rejects(
        client.info(),
        /^Error: reading the engine info: the Docker Engine at tcp:\/\/127\.0\.0\.1:\d+ did not answer within 200 ms$/,
      );
    } finally {
      client.close();
      silent.closeAllConnections();
      silent.close();
    }
  });
});

after(() => engine?.client.close());

if (!engine) {
  test('the Engine API client', { skip: noEngine() }, () => {});
} else {
  const e = engine;
  const { client } = e;

  describe('DockerClient on a real engine', () => {
    test('the client speaks to an engine at a tcp:// address as at a unix socket', async () => {
      if (!DOCKER_HOST.startsWith('unix://')) return;
      const socketPath = DOCKER_HOST.slice('unix://'.length);
      const forwarder = createTcpServer((c) => {
        const upstream = createConnection(socketPath);
        c.pipe(upstream).pipe(c);
        c.on('error', () => upstream.destroy());
        upstream.on('error', () => c.destroy());
      });
      await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve));
      const tcp = new DockerClient({ dockerHost: `tcp://127.0.0.1:${(forwarder.address() as AddressInfo).port}` });
      try {
        await tcp.ping();
        assert.equal((await tcp.info()).ID, (await client.info()).ID);
        assert.ok(await tcp.inspectImage(e.images.idle));
      } finally {
        tcp.close();
        forwarder.close();
      }
    });

    test('an engine error says what was being done and what the engine said', async () => {
      await assert.rejects(client.startContainer('gantry-no-such-container'), (err: Error) => {
        assert.match(
          err.message,
          /^starting container "gantry-no-such-container": No such container: gantry-no-such-container$/,
        );
        return true;
      });
      assert.equal(await client.inspectContainer('gantry-no-such-container'), null);
      assert.equal(await client.removeContainer('gantry-no-such-container', { force: true }), false);
    });

    test('a container`s logs are read from the multiplexed frames, stdout and stderr both', async () => {
      const namespace = uniqueNamespace();
      const created = await client.createContainer(`gantry-${namespace}-logs`, {
        Image: e.images.crashing,
        Env: [],
        Labels: { 'gantry.namespace': namespace },
        Tty: false,
        OpenStdin: false,
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        HostConfig: { RestartPolicy: { Name: 'no' } },
      });
      try {
        await client.startContainer(created.Id);
        assert.equal((await client.waitContainer(created.Id, { timeoutMs: 10_000 })).StatusCode, 3);
        const logs = await client.containerLogs(created.Id);
        assert.deepEqual(logs.split('\n').filter(Boolean).sort(), ['boom', 'loading']);
      } finally {
        await client.removeContainer(created.Id, { force: true });
      }
    });

    test('events are a stream of the filtered containers` actions', async () => {
      const namespace = uniqueNamespace();
      const abort = new AbortController();
      const events = await client.events(
        { filters: { type: ['container'], label: [`gantry.namespace=${namespace}`] } },
        abort.signal,
      );
      const seen: EngineEvent[] = [];
      const reading = (async () => {
        try {
          for await (const event of events) {
            seen.push(event);
            if (event.Action === 'destroy') break;
          }
        } catch {
          // aborted
        }
      })();
      const created = await client.createContainer(`gantry-${namespace}-ev`, {
        Image: e.images.idle,
        Env: [],
        Labels: { 'gantry.namespace': namespace, 'gantry.instance': 'ev' },
        Tty: false,
        OpenStdin: false,
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        HostConfig: { RestartPolicy: { Name: 'no' } },
      });
      await client.removeContainer(created.Id, { force: true });
      await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
      abort.abort();
      assert.deepEqual(
        seen.map((ev) => ev.Action),
        ['create', 'destroy'],
      );
      assert.equal(seen[0]?.Actor.ID, created.Id);
      assert.equal(seen[0]?.Actor.Attributes?.['gantry.instance'], 'ev');
    });

    test('a pull hands the registry credential to the registry, and its refusal reads as the engine says it, without the password in any log', async () => {
      // A registry on 127.0.0.1 (an insecure registry by the engine's default): it asks for basic
      // auth, records what it gets, and knows no image.
      const seen: IncomingHttpHeaders[] = [];
      const registry = createServer((req, res) => {
        seen.push(req.headers);
        if (!req.headers.authorization) {
          res
            .writeHead(401, {
              'www-authenticate': 'Basic realm="gantry-test"',
              'docker-distribution-api-version': 'registry/2.0',
            })
            .end();
          return;
        }
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ errors: [{ code: 'MANIFEST_UNKNOWN', message: 'manifest unknown' }] }));
      });
      await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
      const image = `127.0.0.1:${(registry.address() as AddressInfo).port}/team/app:1`;
      const lines: string[] = [];
      const logger = pino(
        { level: 'debug' },
        new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }),
      );
      const t = makeDockerRuntime(e, {
        logger,
        registries: { allow: [registryOfImage(image)], only: false, private: 'refuse' },
      });
      try {
        const spec = instanceSpec({ image, registryAuth: { username: 'robot', password: 's3cret-pw' } });
        await assert.rejects(t.runtime.start(spec), (err: Error) => {
          assert.match(
            err.message,
            new RegExp(`^pulling image "${image.replace(/[.]/g, '\\.')}": .*(manifest unknown|not found)`),
          );
          return true;
        });
        const basic = seen.map((h) => h.authorization).find((a) => a?.startsWith('Basic '));
        assert.equal(Buffer.from(basic!.slice('Basic '.length), 'base64').toString(), 'robot:s3cret-pw');
        assert.ok(lines.some((l) => l.includes('pulling image')));
        assert.ok(!lines.some((l) => l.includes('s3cret-pw')), 'the password is never logged');
      } finally {
        await t.cleanup();
        // The pull with a credential recorded the repository as private (image-access.ts).
        await e.client.removeVolume(privateImageVolumeName(canonicalImage(image).repository));
        registry.closeAllConnections();
        registry.close();
      }
    });

    test('a pull that fails inside its progress stream rejects with the stream`s error', async () => {
      // The registry has the manifest but not the blob it names: the engine answers 200 and reports
      // the failure in the stream.
      const manifest = JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
        config: {
          mediaType: 'application/vnd.docker.container.image.v1+json',
          size: 2,
          digest: `sha256:${'1'.repeat(64)}`,
        },
        layers: [
          {
            mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
            size: 10,
            digest: `sha256:${'2'.repeat(64)}`,
          },
        ],
      });
      const digest = `sha256:${createHash('sha256').update(manifest).digest('hex')}`;
      const registry = createServer((req, res) => {
        if (req.url === '/v2/' || req.url === '/v2') {
          res.writeHead(200, { 'docker-distribution-api-version': 'registry/2.0' }).end('{}');
        } else if (req.url?.includes('/manifests/')) {
          res.writeHead(200, {
            'content-type': 'application/vnd.docker.distribution.manifest.v2+json',
            'docker-content-digest': digest,
            'content-length': Buffer.byteLength(manifest),
          });
          res.end(req.method === 'HEAD' ? undefined : manifest);
        } else {
          res
            .writeHead(404, { 'content-type': 'application/json' })
            .end(JSON.stringify({ errors: [{ code: 'BLOB_UNKNOWN', message: 'blob unknown to registry' }] }));
        }
      });
      await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
      const image = `127.0.0.1:${(registry.address() as AddressInfo).port}/team/broken:1`;
      const progress: string[] = [];
      try {
        await assert.rejects(
          client.pullImage(image, { onProgress: (m) => progress.push(m.status ?? '') }),
          (err: Error) => {
            assert.match(
              err.message,
              new RegExp(
                `^pulling image "${image.replace(/[.]/g, '\\.')}": .*(blob unknown|not found|unknown blob)`,
                'i',
              ),
            );
            return true;
          },
        );
        assert.ok(progress.length > 0, 'the stream had begun before its error');
      } finally {
        registry.closeAllConnections();
        registry.close();
      }
    });
  });
}
