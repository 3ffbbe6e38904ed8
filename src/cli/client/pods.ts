/** `gantry pods …`: the pod API (/v2/pods) from the command line. */
import { UsageError } from '../usage-error.js';
import { parseDuration } from '../duration.js';
import type { Command, Context, Group } from './command.js';
import { envPairs, readBody } from './input.js';
import { printPodLogs } from './pod-logs.js';
import { podSsh } from './pod-ssh.js';
import { podFields, podTable, type Pod } from './pod-view.js';
import { waitForPod } from './pod-wait.js';

const DEFAULT_WAIT = '10m';
const path = (id: string) => `/v2/pods/${encodeURIComponent(id)}`;

const waitOptions = {
  wait: { type: 'boolean', description: 'wait until the pod is RUNNING, showing its progress' },
  timeout: {
    type: 'string',
    value: 'DURATION',
    description: `how long --wait waits (default ${DEFAULT_WAIT}); then exit 5`,
  },
} as const;

/** Shows the pod, after waiting for RUNNING with --wait. */
async function finish(ctx: Context, pod: Pod, since?: string): Promise<void> {
  const result = ctx.bool('wait')
    ? await waitForPod(ctx.api(), pod, ctx.out, {
        timeoutMs: parseDuration('--timeout', ctx.str('timeout') ?? DEFAULT_WAIT),
        ...(since ? { since } : {}),
      })
    : pod;
  ctx.out.show(result, () => podTable([result]));
}

const list: Command = {
  name: 'list',
  summary: "the account's pods",
  options: {
    all: { type: 'boolean', description: 'also terminated pods' },
    status: { type: 'string', value: 'STATUS', description: 'only pods in this status (RUNNING, EXITED, …)' },
    name: { type: 'string', value: 'NAME', description: 'only pods with this name' },
  },
  async run(ctx) {
    const { pods } = await ctx.api().get<{ pods: Pod[] }>('/v2/pods', {
      ...(ctx.bool('all') ? { includeTerminated: true } : {}),
      ...(ctx.str('status') ? { status: ctx.str('status') } : {}),
      ...(ctx.str('name') ? { name: ctx.str('name') } : {}),
    });
    ctx.out.show(pods, () => podTable(pods));
  },
};

const get: Command = {
  name: 'get',
  args: 'ID',
  arity: [1, 1],
  summary: 'one pod: status, machine, cost, ports, SSH command',
  async run(ctx) {
    const pod = await ctx.api().get<Pod>(path(ctx.args[0]!));
    ctx.out.show(pod, () => podFields(pod));
  },
};

const create: Command = {
  name: 'create',
  summary: 'create a pod from an image or a template',
  details: `Flags set the request's fields over --body (the whole POST /v2/pods request, docs/api.md).
Exactly one of --gpu or --cpu. Examples:
  gantry pods create --name tour --image ubuntu:22.04 --gpu "NVIDIA GeForce RTX 4090" --port 8888/http --wait
  gantry pods create --name box --image ubuntu:22.04 --cpu cpu3c --vcpus 2 --ssh`,
  options: {
    name: { type: 'string', value: 'NAME', description: 'its name (required unless in --body)' },
    image: { type: 'string', value: 'IMAGE', description: 'the container image' },
    template: { type: 'string', value: 'ID', description: 'a template to create it from' },
    gpu: { type: 'string', value: 'TYPE', description: 'a GPU type id (GET /v2/catalog/gpus)' },
    'gpu-count': { type: 'string', value: 'N', description: 'GPUs (default 1)' },
    cpu: { type: 'string', value: 'FLAVOR', description: 'a CPU flavor id instead of a GPU, e.g. cpu3c' },
    vcpus: { type: 'string', value: 'N', description: 'vCPUs of a CPU pod (default 2)' },
    disk: { type: 'string', value: 'GB', description: 'container disk' },
    port: { type: 'string', multiple: true, value: 'PORT/PROTO', description: 'a port to publish, e.g. 8888/http' },
    env: { type: 'string', multiple: true, value: 'KEY=VALUE', description: 'an environment variable' },
    args: { type: 'string', value: 'ARGS', description: 'the start command' },
    'data-center': { type: 'string', multiple: true, value: 'ID', description: 'a data center it may run in' },
    cloud: { type: 'string', value: 'SECURE|COMMUNITY', description: 'the cloud' },
    volume: { type: 'string', value: 'ID:PATH', description: 'mount a network volume at PATH' },
    ssh: { type: 'boolean', description: 'open the SSH proxy to it (startSsh)' },
    body: { type: 'string', value: 'JSON|@FILE|-', description: 'the request as JSON to start from' },
    ...waitOptions,
  },
  async run(ctx) {
    const body = await readBody(ctx.str('body'));
    const set = (key: string, value: unknown) => {
      if (value !== undefined) body[key] = value;
    };
    set('name', ctx.str('name'));
    set('image', ctx.str('image'));
    set('templateId', ctx.str('template'));
    set('args', ctx.str('args'));
    set('disk', ctx.int('disk', 1));
    set('cloud', ctx.str('cloud'));
    set('env', envPairs(ctx.list('env')));
    if (ctx.list('port').length) set('ports', ctx.list('port'));
    if (ctx.list('data-center').length) set('dataCenterIds', ctx.list('data-center'));
    if (ctx.bool('ssh')) set('startSsh', true);
    if (ctx.str('gpu') && ctx.str('cpu')) throw new UsageError('give --gpu or --cpu, not both');
    if (ctx.str('gpu')) set('gpu', { id: ctx.str('gpu'), count: ctx.int('gpu-count', 1) ?? 1 });
    if (ctx.str('cpu')) set('cpu', { id: ctx.str('cpu'), vcpuCount: ctx.int('vcpus', 2) ?? 2 });
    const volume = ctx.str('volume');
    if (volume !== undefined) {
      const colon = volume.indexOf(':');
      if (colon <= 0 || colon === volume.length - 1) throw new UsageError(`--volume "${volume}" is not ID:PATH`);
      set('mounts', { network: [{ volumeId: volume.slice(0, colon), path: volume.slice(colon + 1) }] });
    }
    if (body.name === undefined) throw new UsageError('gantry pods create needs --name (see --help)');
    parseDuration('--timeout', ctx.str('timeout') ?? DEFAULT_WAIT); // a bad value is refused before anything is created
    const pod = await ctx.api().request<Pod>('POST', '/v2/pods', { body });
    await finish(ctx, pod);
  },
};

const action = (name: 'stop' | 'start' | 'restart', summary: string, waits: boolean): Command => ({
  name,
  args: 'ID',
  arity: [1, 1],
  summary,
  ...(waits ? { options: waitOptions } : {}),
  async run(ctx) {
    if (waits) parseDuration('--timeout', ctx.str('timeout') ?? DEFAULT_WAIT);
    const since = new Date(Date.now() - 2000).toISOString();
    const pod = await ctx.api().request<Pod>('POST', `${path(ctx.args[0]!)}/action`, { body: { action: name } });
    await finish(ctx, pod, since);
  },
});

const rm: Command = {
  name: 'rm',
  args: 'ID',
  arity: [1, 1],
  summary: 'terminate a pod (its container disk is gone; network volumes stay)',
  async run(ctx) {
    const id = ctx.args[0]!;
    await ctx.api().request('DELETE', path(id));
    ctx.out.show({ id, terminated: true }, () => `terminated ${id}`);
  },
};

const logs: Command = {
  name: 'logs',
  args: 'ID',
  arity: [1, 1],
  summary: "the pod's output and Gantry's lines about it",
  details: `Without --follow, prints the kept lines (the last --tail) and ends once the stream is quiet
for a second; with it, follows until the pod stops or Ctrl-C. --json: one {"ts","source","line"}
object per line. System lines are marked [gantry].`,
  options: {
    follow: { type: 'boolean', short: 'f', description: 'keep printing new lines' },
    tail: { type: 'string', value: 'N', description: 'lines kept to print first (default 100, at most 5000)' },
    since: { type: 'string', value: 'TIME', description: 'lines from this RFC3339 time on (over --tail)' },
    source: { type: 'string', value: 'container|system', description: 'only one source' },
    timestamps: { type: 'boolean', short: 't', description: 'prefix each line with its time' },
  },
  async run(ctx) {
    await printPodLogs(ctx.api(), ctx.args[0]!, ctx.out, {
      follow: ctx.bool('follow'),
      tail: ctx.int('tail'),
      since: ctx.str('since'),
      source: ctx.str('source'),
      timestamps: ctx.bool('timestamps'),
    });
  },
};

const ssh: Command = {
  name: 'ssh',
  args: 'ID',
  arity: [1, 1],
  rest: 'SSH_OPTIONS…',
  summary: 'a shell in the pod through the SSH proxy (runs ssh)',
  details: `Runs the system ssh with the pod's ssh.proxy endpoint (docs/ssh.md): your SSH key must be
registered (PUT /v2/account/ssh-keys) and the pod created with --ssh. Arguments after -- are ssh
options (e.g. -- -i ~/.ssh/id_ed25519). ssh never sees the API key.`,
  options: {
    print: { type: 'boolean', description: 'print the ssh command instead of running it' },
    direct: { type: 'boolean', description: "use ssh.direct (the pod's own sshd on 22/tcp)" },
  },
  run: (ctx) =>
    podSsh(ctx.api(), ctx.args[0]!, ctx.out, {
      direct: ctx.bool('direct'),
      print: ctx.bool('print'),
      sshArgs: ctx.rest,
    }),
};

export const pods: Group = {
  name: 'pods',
  summary: 'GPU and CPU pods',
  commands: [
    list,
    get,
    create,
    action('stop', 'stop a pod (its disk stays; it costs nothing while stopped)', false),
    action('start', 'start a stopped pod again', true),
    action('restart', 'restart a running pod', true),
    rm,
    logs,
    ssh,
  ],
};
