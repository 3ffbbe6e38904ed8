/**
 * What a host fetches to join with one line (docs/deploy.md, "Fleet: the one-line join"), public
 * like /healthz (a join needs a token; these hold no secret): `GET /agent/v1/install.sh`, the
 * install script written for this control plane; `GET /agent/v1/download/gantry-agent-linux-<arch>`,
 * the agent's single executable; `GET /agent/v1/download/SHA256SUMS`, their checksums as
 * `sha256sum -c` reads them. An executable this installation does not have answers 404 saying how
 * to build it.
 */
import { createReadStream } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { TypedApp } from '../type-provider.js';
import { ApiError } from '../../domain/errors.js';
import {
  AGENT_ARCHES,
  agentBinaries,
  agentBinary,
  agentBinaryName,
  agentDownloadDir,
  type AgentArch,
} from '../../fleet/agent-downloads.js';
import { controlPlaneVersion } from '../../fleet/agent-versions.js';
import { installScript } from '../../fleet/install-script.js';
import { DownloadGate } from '../../fleet/download-gate.js';
import { anonymousCaller } from '../plugins/auth.js';
import type { TransportServices } from '../../transport/services.js';

const notBuilt = (what: string, dir: string): ApiError =>
  new ApiError(
    'ROUTE_NOT_FOUND',
    `This control plane has no ${what} to serve: build it with \`npm run build:agent\` (Node's single executable, written to dist/agent), on a machine of the host's architecture, into ${dir}.`,
  );

export function agentInstallRoutes(app: TypedApp, services: TransportServices): void {
  const { config } = services;
  const dir = agentDownloadDir();
  const gate = new DownloadGate(config.agents.downloads);
  const route = { config: { public: true }, exposeHeadRoute: true } as const;

  app.get('/agent/v1/install.sh', { ...route, schema: { hide: true } }, async (_request, reply) => {
    const binaries = await agentBinaries(dir);
    if (binaries.length === 0) throw notBuilt('agent executable', dir);
    const script = installScript({ server: config.server.publicUrl, binaries, version: controlPlaneVersion() });
    return reply
      .header('content-type', 'text/x-shellscript; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(script);
  });

  app.get(
    '/agent/v1/download/:file',
    { ...route, schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const { file } = request.params;
      if (file === 'SHA256SUMS') {
        const binaries = await agentBinaries(dir);
        if (binaries.length === 0) throw notBuilt('agent executable', dir);
        return reply
          .header('content-type', 'text/plain; charset=utf-8')
          .header('cache-control', 'no-store')
          .send(binaries.map((b) => `${b.sha256}  ${b.name}\n`).join(''));
      }
      const arch = AGENT_ARCHES.find((a): a is AgentArch => agentBinaryName(a) === file);
      if (!arch)
        throw new ApiError(
          'ROUTE_NOT_FOUND',
          `No download "${file.slice(0, 64)}": there are ${AGENT_ARCHES.map(agentBinaryName).join(', ')} and SHA256SUMS.`,
        );
      const binary = await agentBinary(dir, arch);
      if (!binary) throw notBuilt(`agent for linux-${arch}`, dir);
      // HEAD sends no body: it takes no slot
      if (request.method !== 'HEAD') {
        const admission = gate.enter(anonymousCaller(request));
        if ('refused' in admission)
          throw new ApiError('RATE_LIMITED', admission.refused, { headers: { 'Retry-After': '5' } });
        reply.raw.once('close', () => admission.release());
      }
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', binary.size)
        .header('content-disposition', `attachment; filename="${binary.name}"`)
        .header('x-checksum-sha256', binary.sha256)
        .send(createReadStream(binary.path));
    },
  );
}
