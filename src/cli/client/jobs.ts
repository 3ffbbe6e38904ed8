/**
 * `gantry jobs …`: the job API of a queue endpoint (/v2/{endpointId}/run, runsync, status,
 * status-sync, cancel). `run` queues and prints the job id; `run --sync` (or --wait) waits for the
 * result (runsync, then status-sync long-polls) and prints the output; a job that ends FAILED,
 * CANCELLED or TIMED_OUT exits 1, one still unfinished at --timeout exits 5.
 */
import { parseDuration } from '../duration.js';
import type { Command, Context, Group } from './command.js';
import { CliError, EXIT } from './exit-codes.js';
import type { ApiClient } from './http.js';
import { readJsonOrStdin } from './input.js';
import { fields, orDash, type Output } from './output.js';

interface Job {
  id: string;
  status: string;
  output?: unknown;
  error?: unknown;
  delayTime?: number;
  executionTime?: number;
}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);
const DEFAULT_TIMEOUT = '5m';
/** The server's longest runsync / status-sync wait. */
const MAX_SERVER_WAIT_MS = 300_000;
/** What a long-poll may take beyond its wait before the CLI gives up on the request. */
const SLACK_MS = 30_000;

const jobPath = (endpoint: string, what: string, job?: string) =>
  `/v2/${encodeURIComponent(endpoint)}/${what}${job === undefined ? '' : `/${encodeURIComponent(job)}`}`;

const timeoutOption = {
  timeout: {
    type: 'string',
    value: 'DURATION',
    description: `how long to wait for the result (default ${DEFAULT_TIMEOUT}); then exit 5`,
  },
} as const;

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

function jobFields(job: Job): string {
  return fields([
    ['id', job.id],
    ['status', job.status],
    ['delay', job.delayTime === undefined ? '-' : `${job.delayTime} ms`],
    ['execution', job.executionTime === undefined ? '-' : `${job.executionTime} ms`],
    ...(job.output !== undefined ? [['output', show(job.output)] as const] : []),
    ...(job.error !== undefined ? [['error', orDash(show(job.error))] as const] : []),
  ]);
}

/** Long-polls until the job is finished or `deadline`; `first` is what the server answered last. */
async function waitForJob(api: ApiClient, endpoint: string, first: Job, out: Output, deadline: number): Promise<Job> {
  let job = first;
  let last = job.status;
  if (!TERMINAL.has(job.status)) out.progress(`${job.id}  ${job.status}`);
  while (!TERMINAL.has(job.status)) {
    const left = deadline - Date.now();
    if (left <= 0) {
      if (out.json) out.data(job);
      throw new CliError(
        EXIT.timedOut,
        `job ${job.id} is still ${job.status} (gantry jobs status ${endpoint} ${job.id} reads it later)`,
      );
    }
    const wait = Math.max(1000, Math.min(left, MAX_SERVER_WAIT_MS));
    job = await api.request<Job>('GET', jobPath(endpoint, 'status-sync', job.id), {
      query: { wait },
      timeoutMs: wait + SLACK_MS,
    });
    if (job.status !== last) out.progress(`${job.id}  ${(last = job.status)}`);
  }
  return job;
}

/** Prints a finished job: its output for people, the job for --json; answers the exit status. */
function printResult(out: Output, job: Job): number {
  if (out.json) out.data(job);
  else if (job.status === 'COMPLETED' && job.output !== undefined) out.text(show(job.output));
  if (job.status === 'COMPLETED') return EXIT.ok;
  out.note(`gantry: job ${job.id} ${job.status}${job.error !== undefined ? `: ${show(job.error)}` : ''}`);
  return EXIT.error;
}

const timeoutOf = (ctx: Context) => parseDuration('--timeout', ctx.str('timeout') ?? DEFAULT_TIMEOUT);

const run: Command = {
  name: 'run',
  args: 'ENDPOINT',
  arity: [1, 1],
  summary: 'queue a job (prints its id); --sync waits and prints its output',
  details: `The job's input is --input JSON, --input @file.json, --input - or JSON on stdin. Examples:
  gantry jobs run ep123 --input '{"prompt":"hello"}'           # → the job id
  echo '{"n":3}' | gantry jobs run ep123 --sync                 # → the output`,
  options: {
    input: { type: 'string', value: 'JSON|@FILE|-', description: "the job's input" },
    sync: { type: 'boolean', description: 'wait for the result and print its output' },
    wait: { type: 'boolean', description: 'the same as --sync' },
    webhook: { type: 'string', value: 'URL', description: 'a URL the result is POSTed to' },
    ...timeoutOption,
  },
  async run(ctx) {
    const endpoint = ctx.args[0]!;
    const sync = ctx.bool('sync') || ctx.bool('wait');
    const timeoutMs = timeoutOf(ctx);
    const input = await readJsonOrStdin('--input', ctx.str('input'), "the job's input");
    const body = { input, ...(ctx.str('webhook') ? { webhook: ctx.str('webhook') } : {}) };
    const api = ctx.api();
    if (!sync) {
      const job = await api.request<Job>('POST', jobPath(endpoint, 'run'), { body });
      ctx.out.show(job, () => job.id);
      if (!ctx.out.json) ctx.out.note(`queued (${job.status}): gantry jobs status ${endpoint} ${job.id}`);
      return;
    }
    const deadline = Date.now() + timeoutMs;
    const wait = Math.max(1000, Math.min(timeoutMs, MAX_SERVER_WAIT_MS));
    const first = await api.request<Job>('POST', jobPath(endpoint, 'runsync'), {
      body,
      query: { wait },
      timeoutMs: wait + SLACK_MS,
    });
    return printResult(ctx.out, await waitForJob(api, endpoint, first, ctx.out, deadline));
  },
};

const status: Command = {
  name: 'status',
  args: 'ENDPOINT JOB_ID',
  arity: [2, 2],
  summary: "a job's status, timings and output",
  options: { wait: { type: 'boolean', description: 'wait until it is finished' }, ...timeoutOption },
  async run(ctx) {
    const [endpoint, id] = ctx.args as [string, string];
    const timeoutMs = timeoutOf(ctx);
    const api = ctx.api();
    let job = await api.get<Job>(jobPath(endpoint, 'status', id));
    if (ctx.bool('wait')) {
      job = await waitForJob(api, endpoint, job, ctx.out, Date.now() + timeoutMs);
      return printResult(ctx.out, job);
    }
    ctx.out.show(job, () => jobFields(job));
  },
};

const cancel: Command = {
  name: 'cancel',
  args: 'ENDPOINT JOB_ID',
  arity: [2, 2],
  summary: 'cancel a queued or running job',
  async run(ctx) {
    const [endpoint, id] = ctx.args as [string, string];
    const job = await ctx.api().request<Job>('POST', jobPath(endpoint, 'cancel', id));
    ctx.out.show(job, () => `${job.id}  ${job.status}`);
  },
};

export const jobs: Group = {
  name: 'jobs',
  summary: 'jobs of queue-based serverless endpoints',
  commands: [run, status, cancel],
};
