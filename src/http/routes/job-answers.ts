import { Type, type TSchema } from '@sinclair/typebox';
import { JOB_STATUSES } from '../../domain/job-state.js';
import type { JobOperation } from '../../domain/job-rate-limits.js';

/**
 * What the client job API answers on success (wire-protocol §2: always 200). The routes serialize
 * the job service's views without a schema on their hot path, so these are not Fastify response
 * schemas: they are read by the test-mode answer check (response-check.ts, `config.answers`) so
 * a job answer that drifts from the protocol fails the suites that drive it.
 */
const JobStatusSchema = Type.Union(JOB_STATUSES.map((s) => Type.Literal(s)));
const Ms = Type.Integer({ minimum: 0 });

const JobAnswer = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    status: JobStatusSchema,
    delayTime: Type.Optional(Ms),
    executionTime: Type.Optional(Ms),
    output: Type.Optional(Type.Unknown()),
    error: Type.Optional(Type.String()),
    retries: Type.Optional(Type.Integer({ minimum: 0 })),
    workerId: Type.Optional(Type.String()),
    webhookDelivery: Type.Optional(
      Type.Object(
        {
          status: Type.Union([Type.Literal('PENDING'), Type.Literal('DELIVERED'), Type.Literal('FAILED')]),
          attempts: Type.Integer({ minimum: 0 }),
          lastError: Type.Optional(Type.String()),
          nextAttemptAt: Type.Optional(Type.String({ format: 'date-time' })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const StreamAnswer = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    status: JobStatusSchema,
    // Always present: the SDKs crash without it.
    stream: Type.Array(Type.Object({ output: Type.Unknown() }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

const PurgeAnswer = Type.Object(
  { removed: Type.Integer({ minimum: 0 }), status: Type.Literal('completed') },
  { additionalProperties: false },
);

const Count = Type.Integer({ minimum: 0 });
const HealthAnswer = Type.Object(
  {
    jobs: Type.Object(
      {
        completed: Count,
        failed: Count,
        inProgress: Count,
        inQueue: Count,
        retried: Count,
        cancelled: Count,
        timedOut: Count,
      },
      { additionalProperties: false },
    ),
    workers: Type.Object(
      {
        idle: Count,
        running: Count,
        initializing: Count,
        ready: Count,
        throttled: Count,
        unhealthy: Count,
      },
      { additionalProperties: true },
    ),
    scaling: Type.Object(
      {
        capacityError: Type.Union([Type.String(), Type.Null()]),
        crashes: Count,
        backoffUntil: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        lastCrash: Type.Unknown(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** The success answer of each client job operation; `openai` answers what the worker streams. */
export const JOB_ANSWERS: Partial<Record<JobOperation, Record<number, TSchema>>> = {
  run: { 200: JobAnswer },
  runsync: { 200: JobAnswer },
  status: { 200: JobAnswer },
  cancel: { 200: JobAnswer },
  retry: { 200: JobAnswer },
  stream: { 200: StreamAnswer },
  'purge-queue': { 200: PurgeAnswer },
  health: { 200: HealthAnswer },
};
