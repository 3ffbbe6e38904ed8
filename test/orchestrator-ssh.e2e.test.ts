/**
 * What dstack and SkyPilot do with a pod once they launched it, on the Docker runtime with a real
 * engine: a pod of an image with an SSH server (Debian with openssh-server, .ci/build-rootfs.sh)
 * created with the orchestrator's own entrypoint override and PUBLIC_KEY, its published 22/tcp
 * read as each client reads it, a command run over it with the real OpenSSH client, then torn down
 * with the call the client makes. dstack's pod is also edited (podEditJob) between two sessions:
 * it restarts on a fresh container disk, its volume and its start command kept. Skipped, saying
 * why, without an engine, the image or the OpenSSH client (failing under CI=true for the first two).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dockerEngine, noEngine, removeNamespace, testDockerRuntime, uniqueNamespace } from './support/docker.js';
import { SSHD_IMAGE, sshdImageMissing } from './support/docker-images.js';
import { eventually } from './support/eventually.js';
import { removeStandIns, standInNvidiaSmi, TWO_4090 } from './support/nvidia-smi.js';
import { noOpenSsh, runSsh, type SshRun } from './support/openssh.js';
import { startSshFixture, type SshFixture, type SshTenant } from './support/ssh-fixture.js';

// Awaited before any test is declared: a test declared earlier would let the file's root after hooks run before the later ones.
const engine = await dockerEngine();
const skip = engine ? ((await sshdImageMissing(engine.client)) ?? noOpenSsh()) : noEngine();

const GPU = 'NVIDIA GeForce RTX 4090';
/** dstack asks for CUDA 12.8 at least (gpuhunt's MIN_CUDA_VERSION): the stand-in driver has it. */
const BANNER_12_8 = `Fri Nov 27 10:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.86.15              Driver Version: 570.86.15      CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+`;

/** dstack's start command (test/fixtures/dstack-docker-args.json, made by its own code). */
const DSTACK = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'dstack-docker-args.json'), 'utf8')) as {
  graphqlLiteralBody: string;
};

/**
 * dstack's `_get_docker_args`: `json.dumps(json.dumps({"cmd": [command], "entrypoint": ["/bin/sh",
 * "-c"]})).strip('"')` (Python's separators; ASCII text, which both encoders escape alike).
 */
const dstackDockerArgs = (command: string): string =>
  JSON.stringify(`{"cmd": [${JSON.stringify(command)}], "entrypoint": ["/bin/sh", "-c"]}`).slice(1, -1);

/**
 * dstack's command with its runner swapped for the image's sshd: its own prelude (which installs
 * sshd and curl when they are missing), then `/start.sh` where it would download and start its
 * runner (no network reaches the internet here; the runner serves SSH much as sshd does).
 */
const DSTACK_COMMAND = `${(JSON.parse(JSON.parse(`"${DSTACK.graphqlLiteralBody}"`) as string) as { cmd: string[] }).cmd[0]!.split(' && curl ')[0]!} && exec /start.sh`;

/** `_generate_pod_deployment_mutation` (dstack 511c318c) for a secure-cloud GPU offer with a pod volume. */
const dstackCreatePod = (dockerArgs: string) => `
        mutation {
          podFindAndDeployOnDemand(
            input: {
              name: "dstack-e2e-0-0", imageName: "${SSHD_IMAGE}", gpuTypeId: "${GPU}", cloudType: SECURE, minCudaVersion: "12.8", startSsh: true, supportPublicIp: true, dataCenterId: "US-TX-3", gpuCount: 1, volumeInGb: 10, containerDiskInGb: 10, minVcpuCount: 1, minMemoryInGb: 1, dockerArgs: "${dockerArgs}", ports: "22/tcp", volumeMountPath: "/workspace", env: [{ key: "RUNPOD_POD_USER", value: "0" }]
            }
          ) {
            id
            lastStatusChange
            imageName
            machine {
              podHostId
            }
          }
        }
        `;

/** dstack's `get_pod` selection as far as `update_provisioning_data` reads it (the SSH port). */
const dstackGetPod = (podId: string) => `
    query pod {
        pod(input: {podId: "${podId}"}) {
            id
            desiredStatus
            dockerArgs
            imageName
            runtime {
                ports {
                    ip
                    isIpPublic
                    privatePort
                    publicPort
                    type
                }
            }
        }
    }
    `;

/** `_generate_pod_terminate_mutation` (dstack), the same text as runpod-python's `terminate_pod` (SkyPilot's `remove`). */
const podTerminate = (podId: string) => `
    mutation {
        podTerminate(input: { podId: "${podId}" })
    }
    `;

/** SkyPilot's REST v1 launch body (`_rest_pod_create_params`, sky/provision/runpod/utils.py) and the PUBLIC_KEY its pods get. */
const skypilotCreate = (bootstrap: string, publicKey: string) => ({
  name: 'sky-e2e-head',
  imageName: SSHD_IMAGE,
  containerDiskInGb: 10,
  ports: ['22/tcp'],
  supportPublicIp: true,
  computeType: 'GPU',
  cloudType: 'SECURE',
  gpuTypeIds: [GPU],
  gpuCount: 1,
  minVCPUPerGPU: 1,
  minRAMPerGPU: 1,
  dockerEntrypoint: ['bash', '-c'],
  dockerStartCmd: [bootstrap],
  dataCenterIds: ['US-TX-3'],
  env: { PUBLIC_KEY: publicKey },
});
/** SkyPilot's `bootstrap_cmd` shape: its setup script base64-encoded, decoded into init.sh, run with bash. */
const skypilotBootstrap = (script: string) =>
  `echo ${Buffer.from(script).toString('base64')} | base64 --decode > init.sh; bash init.sh`;

test('the e2e test writes dstack`s dockerArgs as dstack does: its encoding of its own command gives its literal', () => {
  const command = (JSON.parse(JSON.parse(`"${DSTACK.graphqlLiteralBody}"`) as string) as { cmd: string[] }).cmd[0]!;
  assert.equal(dstackDockerArgs(command), DSTACK.graphqlLiteralBody);
});

after(() => engine?.client.close());

describe('dstack and SkyPilot over SSH into their pods (Docker runtime)', { skip }, () => {
  const namespace = uniqueNamespace();
  let f: SshFixture;
  let user: SshTenant;
  before(async () => {
    const nvidiaSmi = standInNvidiaSmi({ csv: TWO_4090, banner: BANNER_12_8 });
    f = await startSshFixture({
      runtime: await testDockerRuntime(namespace, { nvidiaSmi: nvidiaSmi.path, gpuMode: 'env-only' }),
      images: {},
      pods: { reconcileIntervalMs: 100, stopGraceMs: 2_000 },
    });
    user = await f.tenant('orchestrator');
  });
  after(async () => {
    await f?.close();
    await removeNamespace(engine!.client, namespace);
    removeStandIns();
  });

  const gql = async (query: string) => {
    const res = await f.call(user.key, 'POST', '/graphql', { query });
    assert.equal(res.status, 200);
    assert.equal(res.body.errors, undefined, JSON.stringify(res.body.errors));
    return res.body.data;
  };
  /** A session that runs `command`, tried until sshd answers (it makes its host keys first); on a timeout, what the client and the container last said. */
  const sshUntilUp = (podId: string, port: number, command: string): Promise<SshRun> => {
    let last: SshRun | null = null;
    return eventually(
      async () => {
        const c = await containerOf(podId).catch(() => null);
        const logs = c
          ? await engine!.client.containerLogs(c.Id, { tail: 20 }).catch((err: Error) => err.message)
          : 'no container';
        return `sshd on port ${port}: the client's last exit ${last?.code} (${last?.stderr.trim()}); container ${c?.State?.Status ?? '?'}; its log: ${String(logs).slice(-2000)}`;
      },
      async () => {
        last = await runSsh({ user: 'root', port, key: user.sshKey.path, command: [command], timeoutMs: 20_000 });
        return last.code === 0 ? last : null;
      },
      90_000,
      250,
    );
  };
  const containerOf = async (podId: string) => {
    const [c] = await engine!.client.listContainers({
      all: true,
      filters: { label: [`gantry.namespace=${namespace}`, `gantry.instance=${podId}`] },
    });
    return c ? engine!.client.inspectContainer(c.Id) : null;
  };
  /** The public 22/tcp of a RUNNING pod, as GraphQL `runtime.ports` gives it and REST v2 `ssh.direct` names it. */
  const sshPort = async (podId: string): Promise<number> => {
    const pod = await f.podUntil(user, podId, (p) => p.status === 'RUNNING' && p.ssh.direct !== null);
    const ports = (await gql(dstackGetPod(podId))).pod.runtime.ports as Array<Record<string, unknown>>;
    const ssh = ports.find((p) => p.privatePort === 22 && p.isIpPublic === true);
    assert.ok(ssh, JSON.stringify(ports));
    assert.deepEqual([ssh.ip, ssh.publicPort], [pod.ssh.direct!.host, pod.ssh.direct!.port]);
    return ssh.publicPort as number;
  };

  test('dstack: its dockerArgs start the image`s sshd under /bin/sh -c; a command runs over ssh; podEditJob restarts it on a fresh disk, volume and override kept; podTerminate ends it', async () => {
    const created = (await gql(dstackCreatePod(dstackDockerArgs(DSTACK_COMMAND)))).podFindAndDeployOnDemand;
    const port = await sshPort(created.id);
    const first = await sshUntilUp(
      created.id,
      port,
      // a session has sshd's env, not the container's: the pod id is the container's hostname
      'echo "hi-$((6*7)) $(cat /etc/hostname)"; echo on-disk > /root/on-disk; echo on-volume > /workspace/on-volume',
    );
    assert.match(first.stdout, new RegExp(`hi-42 ${created.id}`));
    const container = await containerOf(created.id);
    assert.deepEqual([container?.Config.Entrypoint, container?.Config.Cmd], [['/bin/sh', '-c'], [DSTACK_COMMAND]]);

    const edited = await gql(
      `mutation { podEditJob(input: { podId: "${created.id}", env: [{ key: "RUNPOD_POD_USER", value: "0" }, { key: "EDITED", value: "yes" }] }) { id } }`,
    );
    assert.equal(edited.podEditJob.id, created.id);
    const portAfter = await sshPort(created.id);
    assert.equal(portAfter, port, 'the same host port on the same host');
    const second = await sshUntilUp(
      created.id,
      portAfter,
      'cat /workspace/on-volume; test -e /root/on-disk && echo disk-kept || echo disk-wiped',
    );
    assert.match(second.stdout, /on-volume/);
    assert.match(second.stdout, /disk-wiped/);
    const restarted = await containerOf(created.id);
    assert.notEqual(restarted?.Id, container?.Id, 'a new container');
    assert.deepEqual(restarted?.Config.Entrypoint, ['/bin/sh', '-c']);
    assert.ok(restarted?.Config.Env?.includes('EDITED=yes'), 'the edited env');

    assert.deepEqual(await gql(podTerminate(created.id)), { podTerminate: null });
    await f.podUntil(user, created.id, (p) => p.status === 'TERMINATED');
    assert.equal(await containerOf(created.id), null);
  });

  test('SkyPilot: dockerEntrypoint bash -c with its base64 bootstrap as dockerStartCmd starts the image`s sshd; a command runs over ssh; its remove ends it', async () => {
    const res = await f.call(
      user.key,
      'POST',
      '/v1/pods',
      skypilotCreate(skypilotBootstrap('exec /start.sh\n'), user.sshKey.publicKey),
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const podId = res.body.id as string;
    assert.deepEqual(res.body.dockerEntrypoint, ['bash', '-c']);
    const port = await sshPort(podId);
    const run = await sshUntilUp(podId, port, 'echo "sky-$((6*7))"; cat /etc/debian_version; id -u');
    assert.match(run.stdout, /sky-42\n12\.\d+\n0\n/);
    const container = await containerOf(podId);
    assert.deepEqual(container?.Config.Entrypoint, ['bash', '-c']);

    assert.deepEqual(await gql(podTerminate(podId)), { podTerminate: null });
    const gone = await f.call(user.key, 'GET', `/v1/pods/${podId}`);
    assert.equal(gone.body.desiredStatus, 'TERMINATED');
    assert.equal(await containerOf(podId), null);
  });
});
