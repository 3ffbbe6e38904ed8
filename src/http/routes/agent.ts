/**
 * The agent protocol (docs/fleet.md), under `/agent/v1`: `join` (with a one-time token), `report`
 * and `operations` (a long-poll), both authenticated by the host credential the join handed out.
 * API keys are not accepted here, and host credentials are not accepted by the API (auth.ts).
 * Wrong tokens and credentials are counted per client address and refused with 429 past a quota
 * (auth-failure-limit.ts). Served on the job listener too, so an agent can use the workers' URL;
 * not in the OpenAPI document (agents, not people, call these).
 *
 * Fields a newer agent sends and this server does not know are ignored, so agents and control
 * planes of neighbouring versions keep talking during an upgrade; the known ones are typed strictly.
 */
import type { FastifyRequest } from 'fastify';
import { isObject, type TypedApp } from '../type-provider.js';
import { Type, type Static } from '@sinclair/typebox';
import { ApiError, isApiError } from '../../domain/errors.js';
import {
  AGENT_API_PREFIX,
  MAX_AGENT_POLL_WAIT_MS,
  type InstanceReport,
  type OperationResult,
  type ReportRequest,
} from '../../fleet/protocol.js';
import type { InstanceStats } from '../../runtime/runtime.js';
import { HOST_CREDENTIAL_PREFIX } from '../../fleet/host-secrets.js';
import type { TransportServices } from '../../transport/services.js';
import { clientKey } from '../client-address.js';
import { AuthFailureLimiter } from '../plugins/auth-failure-limit.js';
import { StringEnum, Nullable } from '../schemas.js';
import { clientGone } from '../client-gone.js';
import { controlPlaneVersion, versionSkewMessage, versionVerdict } from '../../fleet/agent-versions.js';
import { installCommand } from '../../fleet/agent-downloads.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The host whose credential authenticated an agent protocol request. */
    agentHostId: string | null;
  }
}

/** Largest report: a full list of a host's instances. */
const REPORT_BODY_LIMIT = 4 * 1024 * 1024;
const open = { additionalProperties: true } as const;
const INSTANCE_ID = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
const INSTANCE_ID_RE = new RegExp(INSTANCE_ID);
const GPU_UUID = /^GPU-[0-9A-Fa-f-]{1,64}$/;

const JoinBody = Type.Object(
  {
    token: Type.String({ maxLength: 128 }),
    name: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$',
      description: 'the host name, as `hostname` gives it',
    }),
    publicIp: Type.String({ maxLength: 64 }),
    portRange: Type.Array(Type.Integer(), { maxItems: 2 }),
    agentVersion: Type.String({ minLength: 1, maxLength: 64 }),
    /** checked in full by the service (400 CAPACITY_INVALID naming each field) */
    capacity: Type.Object({}, open),
  },
  open,
);

const InstanceReportSchema = Type.Object(
  {
    id: Type.String({ pattern: INSTANCE_ID }),
    owner: Type.Object(
      {
        kind: StringEnum(['pod', 'worker'] as const),
        accountId: Type.String({ maxLength: 128 }),
        endpointId: Type.Optional(Type.String({ maxLength: 128 })),
      },
      open,
    ),
    state: StringEnum(['starting', 'running', 'suspended', 'exited', 'failed', 'unknown'] as const),
    startedAt: Nullable(Type.Number()),
    exitCode: Nullable(Type.Integer()),
    reason: Nullable(Type.String({ maxLength: 4000 })),
    kept: Type.Optional(Type.Boolean()),
  },
  open,
);

const ReportBody = Type.Object(
  {
    capacity: Type.Optional(Type.Object({}, open)),
    /** screened entry by entry in knownReport (figures out of range or of another shape are dropped) */
    stats: Type.Optional(Type.Object({}, { ...open, maxProperties: 10_000 })),
    instances: Type.Optional(
      Type.Object({ full: Type.Boolean(), items: Type.Array(InstanceReportSchema, { maxItems: 10_000 }) }, open),
    ),
    acks: Type.Optional(
      Type.Array(
        Type.Object(
          {
            opId: Type.String({ maxLength: 128 }),
            ok: Type.Boolean(),
            error: Type.Optional(Type.String({ maxLength: 10_000 })),
            /** an image operation's result: its shape is checked by the fleet runtime (fleet-images.ts) */
            result: Type.Optional(Type.Object({}, open)),
          },
          open,
        ),
        { maxItems: 1000 },
      ),
    ),
  },
  open,
);

const OperationsQuery = Type.Object(
  {
    after: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 }),
    waitMs: Type.Integer({ minimum: 0, maximum: MAX_AGENT_POLL_WAIT_MS, default: 0 }),
  },
  { additionalProperties: false },
);

/** The report with only the fields this server knows (a newer agent's extra fields dropped). */
function knownReport(body: Static<typeof ReportBody>): ReportRequest {
  const report: ReportRequest = {};
  if (body.capacity !== undefined) report.capacity = body.capacity as unknown as ReportRequest['capacity'];
  if (body.acks)
    report.acks = body.acks.map((a) => ({
      opId: a.opId,
      ok: a.ok,
      ...(a.error !== undefined ? { error: a.error } : {}),
      ...(a.result !== undefined ? { result: a.result as OperationResult } : {}),
    }));
  if (body.stats) report.stats = knownStats(body.stats);
  if (body.instances)
    report.instances = {
      full: body.instances.full,
      items: body.instances.items.map((i): InstanceReport => ({
        id: i.id,
        owner: {
          kind: i.owner.kind,
          accountId: i.owner.accountId,
          ...(i.owner.endpointId !== undefined ? { endpointId: i.owner.endpointId } : {}),
        },
        state: i.state,
        startedAt: i.startedAt,
        exitCode: i.exitCode,
        reason: i.reason,
        // a stopped container the host keeps: not an instance that exited on its own
        ...(i.kept === true ? { kept: true } : {}),
      })),
    };
  return report;
}

const percent = (v: unknown): number | null =>
  typeof v === 'number' && Number.isFinite(v) ? Math.min(100, Math.max(0, v)) : null;

/** The figures of a report's `stats` that have the protocol's shape, per instance id. */
function knownStats(raw: Record<string, unknown>): Record<string, InstanceStats> {
  const known: Record<string, InstanceStats> = Object.create(null) as Record<string, InstanceStats>;
  for (const [id, value] of Object.entries(raw)) {
    // (an array, which has none of the figures, is skipped here rather than below)
    if (!INSTANCE_ID_RE.test(id) || !isObject(value)) continue;
    const v = value;
    const cpuUtil = percent(v.cpuUtil);
    const memoryUtil = percent(v.memoryUtil);
    const memoryBytes =
      typeof v.memoryBytes === 'number' && Number.isFinite(v.memoryBytes) && v.memoryBytes >= 0 ? v.memoryBytes : null;
    if (cpuUtil === null || memoryUtil === null || memoryBytes === null) continue;
    const stats: InstanceStats = { cpuUtil, memoryUtil, memoryBytes };
    if (Array.isArray(v.gpus) && v.gpus.length <= 64) {
      const gpus = (v.gpus as unknown[]).map((g) => {
        const gpu = isObject(g) ? g : {};
        const id = typeof gpu.id === 'string' && GPU_UUID.test(gpu.id) ? { id: gpu.id } : {};
        return { util: percent(gpu.util), memoryUtil: percent(gpu.memoryUtil), ...id };
      });
      if (gpus.every((g) => g.util !== null && g.memoryUtil !== null))
        stats.gpus = gpus as NonNullable<InstanceStats['gpus']>;
    }
    known[id] = stats;
  }
  return known;
}

/** The bearer token of the request, or null. */
function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

export function agentRoutes(app: TypedApp, services: TransportServices): void {
  const { fleet, config } = services;
  const failures = new AuthFailureLimiter(services.clock);
  const version = controlPlaneVersion();
  app.decorateRequest('agentHostId', null);
  // Reports come every few seconds from every host: request lines only at warn (or quieter).
  const logLevel =
    (['error', 'fatal', 'silent'] as const).find((l) => l === config.server.logLevel) ?? ('warn' as const);
  const base = { config: { agentProtocol: true }, logLevel, exposeHeadRoute: false } as const;

  /** Authenticates the host credential; wrong ones count against the client address. */
  async function hostCredential(request: FastifyRequest): Promise<void> {
    const client = clientKey(request.ip);
    const refusal = failures.refusal(client);
    const credential = bearer(request);
    if (credential === null)
      throw new ApiError(
        'UNAUTHORIZED',
        `A host credential is required: send "Authorization: Bearer ${HOST_CREDENTIAL_PREFIX}…", the credential the agent received when it joined.`,
        {
          headers: { 'WWW-Authenticate': 'Bearer' },
        },
      );
    if (!credential.startsWith(HOST_CREDENTIAL_PREFIX)) {
      if (refusal) throw refusal;
      failures.failed(client);
      throw new ApiError(
        'UNAUTHORIZED',
        `The agent protocol takes a host credential (${HOST_CREDENTIAL_PREFIX}…), the one its agent received when it joined; API keys are not accepted here.`,
        {
          headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
        },
      );
    }
    try {
      request.agentHostId = (await fleet.authenticate(credential, { unlessKnown: refusal })).hostId;
    } catch (err) {
      if (isApiError(err) && err.code === 'UNAUTHORIZED') failures.failed(client);
      throw err;
    }
  }
  const hostOf = (request: FastifyRequest): string => {
    if (request.agentHostId === null) throw new ApiError('UNAUTHORIZED', 'A host credential is required.');
    return request.agentHostId;
  };

  app.post(`${AGENT_API_PREFIX}/join`, { ...base, schema: { hide: true, body: JoinBody } }, async (request, reply) => {
    const client = clientKey(request.ip);
    const refusal = failures.refusal(client);
    if (refusal) throw refusal;
    const body = request.body;
    // Said before the token is spent: the same token joins once the agent is upgraded.
    const verdict = versionVerdict(body.agentVersion, version);
    if (verdict !== 'compatible')
      request.log.warn(
        {
          agentVersion: body.agentVersion,
          controlPlaneVersion: version,
          name: body.name,
          refused: verdict === 'incompatible',
        },
        verdict === 'incompatible'
          ? "refused a join: the agent's version is too far from the control plane's"
          : "a joining agent's version cannot be compared with the control plane's",
      );
    if (verdict === 'incompatible')
      throw new ApiError(
        'AGENT_VERSION_UNSUPPORTED',
        `${versionSkewMessage(body.agentVersion, version, installCommand(config.server.publicUrl, 'gjt_…'))} (the join token was not spent).`,
      );
    try {
      const answer = await fleet.join({
        token: body.token,
        name: body.name,
        publicIp: body.publicIp,
        portRange: body.portRange as [number, number],
        agentVersion: body.agentVersion,
        capacity: body.capacity as never,
      });
      return reply.code(201).send({ ...answer, controlPlaneVersion: version });
    } catch (err) {
      if (isApiError(err) && err.code === 'JOIN_TOKEN_INVALID') failures.failed(client);
      throw err;
    }
  });

  app.post(
    `${AGENT_API_PREFIX}/report`,
    { ...base, bodyLimit: REPORT_BODY_LIMIT, onRequest: hostCredential, schema: { hide: true, body: ReportBody } },
    async (request) => fleet.report(hostOf(request), knownReport(request.body ?? {})),
  );

  app.get(
    `${AGENT_API_PREFIX}/operations`,
    { ...base, onRequest: hostCredential, schema: { hide: true, querystring: OperationsQuery } },
    async (request, reply) => {
      const { after, waitMs } = request.query;
      const operations = await fleet.waitForOperations(hostOf(request), after, { waitMs, signal: clientGone(reply) });
      return { operations };
    },
  );
}
