/**
 * Logs as Server-Sent Events (docs/logs.md), in the shape of the public REST v2 OpenAPI:
 * `GET /v2/pods/{id}/logs` and `GET /v2/serverless/{id}/workers/{workerId}/logs`. Each event is
 * `id: <ts>/<ordinal>` and `data: {"ts","source","line"}`; `Last-Event-ID` resumes (over `since`,
 * over `tail`). The stream follows until the client leaves or the instance stops; comment lines
 * keep idle proxies from cutting it. Written with backpressure: while the socket needs draining,
 * no more lines are read.
 */
import { once } from 'node:events';
import type { FastifyReply } from 'fastify';
import type { TypedApp, TypedRequest } from '../type-provider.js';
import { Type } from '@sinclair/typebox';
import type { TransportServices } from '../../transport/services.js';
import { ApiError } from '../../domain/errors.js';
import { ID_PATTERN } from '../../domain/ids.js';
import { formatTs, parseEventId, parseRfc3339 } from '../../logs/log-cursor.js';
import { LOG_SOURCES, type LogStart, type LogTarget } from '../../logs/log-streams.js';
import { principalOf } from '../plugins/auth.js';
import { IdParams, StringEnum, errorResponses } from '../schemas.js';

/** @see the OpenAPI's LogTail */
const MAX_LOG_TAIL = 5000;
const DEFAULT_TAIL = 100;

const LogQuery = Type.Object(
  {
    source: Type.Optional(
      StringEnum(LOG_SOURCES, {
        description:
          "Log source to stream: `container` (its stdout/stderr) or `system` (the platform's lifecycle lines). Omit for both, merged in time order.",
      }),
    ),
    tail: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_LOG_TAIL,
        description:
          'Historical lines to backfill before streaming (default 100; 0 = live only; at most 5000). Ignored with `since` or `Last-Event-ID`.',
      }),
    ),
    since: Type.Optional(
      Type.String({
        description:
          'RFC3339 time to resume from (inclusive). Ignored with `Last-Event-ID`; `tail` is ignored with it.',
        examples: ['2026-06-01T12:02:03Z'],
      }),
    ),
  },
  { additionalProperties: false },
);

const LogHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      description:
        'SSE reconnect cursor: an event `id` this endpoint sent (`<ts>/<ordinal>`) or an RFC3339 time. Takes precedence over `since` and `tail`.',
    }),
  ),
});

/** What the log routes share: their query and headers. */
type LogRequest = TypedRequest<{ querystring: typeof LogQuery; headers: typeof LogHeaders }>;

const WorkerParams = Type.Object(
  { id: Type.String({ pattern: ID_PATTERN }), workerId: Type.String({ pattern: ID_PATTERN }) },
  { additionalProperties: false },
);

const eventStream = {
  200: {
    description:
      'Server-Sent Events. Each event: `id: <ts>/<12-digit ordinal>` and `data: {"ts","source","line"}`; comment lines (`: keep-alive`) come while idle. Headers: Cache-Control: no-cache, Connection: keep-alive, X-Accel-Buffering: no.',
    content: {
      'text/event-stream': {
        schema: {
          type: 'string',
          examples: [
            'id: 2026-06-01T12:02:03.000Z/000000000000\ndata: {"ts":"2026-06-01T12:02:03.000Z","source":"container","line":"Model loaded."}\n\n',
          ],
        },
      },
    },
  },
  ...errorResponses,
};

export function logRoutes(app: TypedApp, { logs, logTargets }: TransportServices): void {
  app.get(
    '/v2/pods/:id/logs',
    {
      schema: {
        operationId: 'getPodLogs',
        tags: ['pods'],
        summary: 'Stream pod logs',
        description:
          "Streams the pod's logs as Server-Sent Events: its own output (`container`) and the platform's lines about it (`system`). A stopped pod's stream sends what is kept and ends.",
        params: IdParams,
        querystring: LogQuery,
        headers: LogHeaders,
        response: eventStream,
      },
    },
    async (request, reply) => {
      const start = startOf(request);
      const { accountId } = principalOf(request);
      const target = await logTargets.pod(accountId, request.params.id);
      await stream(accountId, request, reply, target, start);
    },
  );

  app.get(
    '/v2/serverless/:id/workers/:workerId/logs',
    {
      schema: {
        operationId: 'getWorkerLogs',
        tags: ['serverless'],
        summary: "Stream a serverless worker's logs",
        description:
          "Streams the worker's logs as Server-Sent Events, like a pod's (`container` and `system` sources). A dead worker's stream sends what is kept and ends.",
        params: WorkerParams,
        querystring: LogQuery,
        headers: LogHeaders,
        response: eventStream,
      },
    },
    async (request, reply) => {
      const start = startOf(request);
      const { accountId } = principalOf(request);
      const target = await logTargets.worker(accountId, request.params.id, request.params.workerId);
      await stream(accountId, request, reply, target, start);
    },
  );

  /**
   * The lines, written as fast as the client reads them. The account's slot is taken first (over
   * its cap: 429 before anything is sent) and freed however the stream ends.
   */
  async function stream(
    accountId: string,
    request: LogRequest,
    reply: FastifyReply,
    target: LogTarget,
    start: LogStart,
  ): Promise<void> {
    const slot = logs.admit(accountId);
    try {
      await follow(request, reply, target, start);
    } finally {
      slot.release();
    }
  }

  async function follow(request: LogRequest, reply: FastifyReply, target: LogTarget, start: LogStart): Promise<void> {
    const raw = reply.raw;
    const gone = new AbortController();
    raw.once('close', () => gone.abort());
    // A client that left while the stream's target was looked up closed the connection already:
    // no 'close' comes, and the stream would follow (holding its slot) for nobody.
    if (raw.destroyed || request.raw.socket.destroyed) gone.abort();
    reply.hijack();
    raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // The headers go now, so a client sees the stream open before the first line.
    raw.flushHeaders();
    const keepAlive = setInterval(() => {
      if (raw.writableNeedDrain) return;
      raw.write(': keep-alive\n\n');
    }, logs.keepAliveMs);
    try {
      const source = request.query.source;
      for await (const e of logs.open(target, {
        start,
        signal: gone.signal,
        ...(source ? { sources: [source] } : {}),
      })) {
        const data = JSON.stringify({ ts: formatTs(e.ts), source: e.source, line: e.line });
        if (!raw.write(`id: ${e.id}\ndata: ${data}\n\n`)) await Promise.race([once(raw, 'drain'), once(raw, 'close')]);
        if (gone.signal.aborted) break;
      }
    } catch (err) {
      request.log.warn({ err: (err as Error).message }, 'log stream ended by an error');
    } finally {
      clearInterval(keepAlive);
      gone.abort();
      raw.end();
    }
  }
}

/** Where the stream begins: `Last-Event-ID`, else `since`, else `tail` (the OpenAPI's precedence). */
function startOf(request: LogRequest): LogStart {
  // a string: Node joins a repeated header's values (only set-cookie stays a list)
  const lastEventId = request.headers['last-event-id'];
  if (lastEventId !== undefined && lastEventId.trim() !== '') {
    const cursor = parseEventId(lastEventId);
    if (!cursor)
      throw new ApiError(
        'INVALID_PARAMETER',
        `Invalid Last-Event-ID "${lastEventId.slice(0, 80)}": expected an event id this endpoint sent (<RFC3339 time>/<ordinal>) or an RFC3339 time.`,
      );
    return { after: cursor };
  }
  const { since, tail } = request.query;
  if (since !== undefined) {
    const sinceMs = parseRfc3339(since);
    if (sinceMs === null)
      throw new ApiError(
        'INVALID_PARAMETER',
        `Invalid query parameter: since "${since.slice(0, 80)}" is not an RFC3339 time (e.g. 2026-06-01T12:02:03Z).`,
      );
    return { sinceMs };
  }
  return { tail: tail ?? DEFAULT_TAIL };
}
