/** `gantry endpoints …`: serverless endpoints (/v2/serverless). */
import { UsageError } from '../usage-error.js';
import { parseDuration } from '../duration.js';
import { deleteCommand, type Command, type Group } from './command.js';
import { envPairs, readBody } from './input.js';
import { age, fields, orDash, table } from './output.js';

interface Endpoint {
  id: string;
  name: string;
  type: string;
  image: string;
  /** null for a CPU endpoint, which has `cpu` */
  gpu: { pools: string[]; count: number } | null;
  cpu?: Array<{ id: string; vcpuCount: number }>;
  workers: { min: number; max: number; idleTimeout?: number };
  scaling: { type: string; queueDelay?: number; requestCount?: number };
  dataCenterIds: string[];
  networkVolumes: string[];
  timeout: number;
  requestUrls: { run: string; runSync: string };
  /** a load-balancing endpoint's address on the proxy listener */
  loadBalancerUrl?: string;
  createdAt: string;
}

const path = (id: string) => `/v2/serverless/${encodeURIComponent(id)}`;
const workers = (e: Endpoint) => `${e.workers.min}-${e.workers.max}`;

const list: Command = {
  name: 'list',
  summary: "the account's endpoints",
  async run(ctx) {
    const { endpoints } = await ctx.api().get<{ endpoints: Endpoint[] }>('/v2/serverless');
    ctx.out.show(endpoints, () =>
      endpoints.length === 0
        ? 'no endpoints (gantry endpoints create --help)'
        : table(
            ['ID', 'NAME', 'TYPE', 'WORKERS', 'GPU POOLS', 'IMAGE', 'AGE'],
            endpoints.map((e) => [e.id, e.name, e.type, workers(e), compute(e), e.image, age(e.createdAt)]),
          ),
    );
  },
};

/** A GPU endpoint's pools, or a CPU endpoint's flavors and sizes. */
const compute = (e: Endpoint): string =>
  (e.gpu ? e.gpu.pools.join(',') : (e.cpu ?? []).map((c) => `${c.id}×${c.vcpuCount}`).join(',')) || '-';

const get: Command = {
  name: 'get',
  args: 'ID',
  arity: [1, 1],
  summary: 'one endpoint: image, GPUs, workers, scaling, where its requests go',
  async run(ctx) {
    const e = await ctx.api().get<Endpoint>(path(ctx.args[0]!));
    ctx.out.show(e, () =>
      fields([
        ['id', e.id],
        ['name', e.name],
        ['type', e.type],
        ['image', e.image],
        e.gpu ? ['gpu', `${e.gpu.count} × ${e.gpu.pools.join(', ') || '-'}`] : ['cpu', compute(e)],
        [
          'workers',
          `${workers(e)}${e.workers.idleTimeout !== undefined ? `, idle timeout ${e.workers.idleTimeout}s` : ''}`,
        ],
        ['scaling', `${e.scaling.type} ${orDash(e.scaling.queueDelay ?? e.scaling.requestCount)}`],
        ['data centers', e.dataCenterIds.join(', ') || 'any'],
        ['volume', e.networkVolumes.join(', ') || '-'],
        ['job timeout', `${e.timeout} ms`],
        ...(e.loadBalancerUrl
          ? [['requests', `${e.loadBalancerUrl}/{any path} (Authorization: Bearer <API key>)`] as [string, string]]
          : [['run', e.requestUrls.run] as [string, string], ['runsync', e.requestUrls.runSync] as [string, string]]),
        ['created', e.createdAt],
      ]),
    );
  },
};

const create: Command = {
  name: 'create',
  summary: 'create an endpoint from a serverless template or an image',
  details: `Flags set the request's fields over --body (the whole POST /v2/serverless request). Example:
  gantry endpoints create --name echo --template tpl123 --gpu-pool ADA_24 --workers-max 2`,
  options: {
    name: { type: 'string', value: 'NAME', description: 'its name (required unless in --body)' },
    template: { type: 'string', value: 'ID', description: 'a serverless template' },
    image: { type: 'string', value: 'IMAGE', description: 'the worker image (instead of a template)' },
    type: { type: 'string', value: 'QUEUE|LOAD_BALANCER', description: 'request routing (default QUEUE)' },
    'gpu-pool': { type: 'string', multiple: true, value: 'POOL', description: 'a GPU pool, e.g. ADA_24' },
    'gpu-count': { type: 'string', value: 'N', description: 'GPUs per worker (default 1)' },
    'workers-min': { type: 'string', value: 'N', description: 'workers kept running (default 0)' },
    'workers-max': { type: 'string', value: 'N', description: 'most workers (default 3)' },
    'idle-timeout': { type: 'string', value: 'SECONDS', description: 'how long an idle worker stays' },
    'queue-delay': { type: 'string', value: 'SECONDS', description: 'scale on queue delay (QUEUE; default 4)' },
    'request-count': { type: 'string', value: 'N', description: 'scale on requests per worker instead' },
    'job-timeout': { type: 'string', value: 'DURATION', description: "jobs' execution timeout (default 5m)" },
    env: { type: 'string', multiple: true, value: 'KEY=VALUE', description: 'an environment variable' },
    'data-center': { type: 'string', multiple: true, value: 'ID', description: 'a data center workers may run in' },
    volume: { type: 'string', value: 'ID', description: 'a network volume for the workers' },
    body: { type: 'string', value: 'JSON|@FILE|-', description: 'the request as JSON to start from' },
  },
  async run(ctx) {
    const body = await readBody(ctx.str('body'));
    const set = (key: string, value: unknown) => {
      if (value !== undefined) body[key] = value;
    };
    set('name', ctx.str('name'));
    set('templateId', ctx.str('template'));
    set('image', ctx.str('image'));
    set('type', ctx.str('type') ?? (body.type === undefined ? 'QUEUE' : undefined));
    set('env', envPairs(ctx.list('env')));
    if (ctx.list('data-center').length) set('dataCenterIds', ctx.list('data-center'));
    if (ctx.str('volume')) set('networkVolumes', [ctx.str('volume')]);
    const jobTimeout = ctx.str('job-timeout');
    if (jobTimeout !== undefined) set('timeout', parseDuration('--job-timeout', jobTimeout));
    const pools = ctx.list('gpu-pool');
    const gpuCount = ctx.int('gpu-count', 1);
    if (pools.length || gpuCount !== undefined)
      set('gpu', {
        ...(body.gpu as object | undefined),
        ...(pools.length ? { pools } : {}),
        ...(gpuCount !== undefined ? { count: gpuCount } : {}),
      });
    const [min, max, idle] = [ctx.int('workers-min'), ctx.int('workers-max'), ctx.int('idle-timeout', 1)];
    if (min !== undefined || max !== undefined || idle !== undefined)
      set('workers', {
        ...(body.workers as object | undefined),
        ...(min !== undefined ? { min } : {}),
        ...(max !== undefined ? { max } : {}),
        ...(idle !== undefined ? { idleTimeout: idle } : {}),
      });
    const delay = ctx.int('queue-delay', 1);
    const count = ctx.int('request-count', 1);
    if (delay !== undefined && count !== undefined)
      throw new UsageError('give --queue-delay or --request-count, not both');
    if (count !== undefined || body.type === 'LOAD_BALANCER') {
      if (count !== undefined || body.scaling === undefined)
        set('scaling', { type: 'REQUEST_COUNT', requestCount: count ?? 1 });
    } else if (delay !== undefined || body.scaling === undefined)
      set('scaling', { type: 'QUEUE_DELAY', queueDelay: delay ?? 4 });
    if (body.name === undefined) throw new UsageError('gantry endpoints create needs --name (see --help)');
    const e = await ctx.api().request<Endpoint>('POST', '/v2/serverless', { body });
    ctx.out.show(e, () => `created endpoint ${e.id} (${e.name}): gantry jobs run ${e.id} --input '{…}'`);
  },
};

const remove = deleteCommand('delete', 'delete an endpoint', path);

export const endpoints: Group = {
  name: 'endpoints',
  summary: 'serverless endpoints (their jobs: gantry jobs)',
  commands: [list, get, create, remove],
};
