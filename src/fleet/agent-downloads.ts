/**
 * What the control plane serves a host that joins with the one-line command (docs/deploy.md,
 * "Fleet: the one-line join"): the agent's single executable for each architecture it has
 * (`dist/agent/gantry-agent-linux-<arch>`, built by `npm run build:agent`, with its `.sha256`
 * beside it), and the command that fetches the install script. The folder is the installation's
 * `dist/agent`, or `GANTRY_AGENT_DOWNLOAD_DIR`.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const AGENT_ARCHES = ['x64', 'arm64'] as const;
export type AgentArch = (typeof AGENT_ARCHES)[number];

export const agentBinaryName = (arch: AgentArch): string => `gantry-agent-linux-${arch}`;

export interface AgentBinary {
  arch: AgentArch;
  name: string;
  path: string;
  size: number;
  sha256: string;
}

/** The folder the executables are served from. */
export function agentDownloadDir(env: NodeJS.ProcessEnv = process.env): string {
  // two folders up: the package's root from src/fleet, dist/fleet and dist/bundle alike
  return env.GANTRY_AGENT_DOWNLOAD_DIR || fileURLToPath(new URL('../../dist/agent/', import.meta.url));
}

const known = new Map<string, { mtimeMs: number; size: number; sha256: string }>();

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * The executable for `arch`, or null when this installation has none. Its checksum is the one
 * the build wrote beside it, or, when there is none, computed once per file version.
 */
export async function agentBinary(dir: string, arch: AgentArch): Promise<AgentBinary | null> {
  const name = agentBinaryName(arch);
  const path = join(dir, name);
  const info = await stat(path).catch(() => null);
  if (!info?.isFile()) return null;
  const cached = known.get(path);
  if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size)
    return { arch, name, path, size: info.size, sha256: cached.sha256 };
  const written = await readFile(`${path}.sha256`, 'utf8').catch(() => null);
  const stated = written && /^([0-9a-f]{64})\s/.exec(written)?.[1];
  const writtenAfter = stated && (await stat(`${path}.sha256`)).mtimeMs >= info.mtimeMs;
  const sha256 = stated && writtenAfter ? stated : await sha256Of(path);
  known.set(path, { mtimeMs: info.mtimeMs, size: info.size, sha256 });
  return { arch, name, path, size: info.size, sha256 };
}

/** Every architecture's executable this installation has. */
export async function agentBinaries(dir: string): Promise<AgentBinary[]> {
  const found = await Promise.all(AGENT_ARCHES.map((arch) => agentBinary(dir, arch)));
  return found.filter((b): b is AgentBinary => b !== null);
}

/** The one-line join (with a token) or upgrade (without) a host runs, against the control plane at `publicUrl`. */
export function installCommand(publicUrl: string, token: string | null): string {
  const url = `${publicUrl.replace(/\/+$/, '')}/agent/v1/install.sh`;
  return `curl -fsSL ${url} | sudo sh${token ? ` -s -- --token ${token}` : ''}`;
}
