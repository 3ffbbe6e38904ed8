/**
 * The agent's data dir and the host identity kept in it (`credential.json`): what the control
 * plane answered at join, credential included. The dir is 0700 and the file 0600, written
 * atomically; nothing here logs the credential.
 */
import { chmod, mkdir, open, readFile, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { JoinAnswer } from '../fleet/protocol.js';
import { AgentFatal } from './agent-fatal.js';

/** The host's identity, as stored: the join's answer and when it came. */
export interface AgentIdentity extends JoinAnswer {
  /** ms epoch */
  joinedAt: number;
}

const CREDENTIAL_FILE = 'credential.json';

/** Makes `dir` (0700), or takes group and other permissions off it when it exists with them. */
export async function prepareDataDir(dir: string, logger: Pick<Logger, 'warn'>): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const { mode } = await stat(dir);
    if ((mode & 0o077) !== 0) {
      await chmod(dir, 0o700);
      logger.warn(
        { dataDir: dir },
        'took group and other permissions off the agent data dir: it holds the host credential',
      );
    }
  } catch (err) {
    throw new AgentFatal(`cannot use ${dir} as the agent's data dir: ${(err as Error).message}`, 2);
  }
}

/** Writes `text` to `path` (mode 0600) through a temporary file, so a crash leaves the old or the new content. */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const temporary = `${path}.tmp`;
  const file = await open(temporary, 'w', 0o600);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
}

const isIdentity = (v: unknown): v is AgentIdentity => {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.hostId === 'string' &&
    typeof o.credential === 'string' &&
    o.credential.startsWith('ghc_') &&
    typeof o.dataCenterId === 'string' &&
    (o.cloud === 'SECURE' || o.cloud === 'COMMUNITY') &&
    typeof o.heartbeatMs === 'number' &&
    typeof o.pollWaitMs === 'number'
  );
};

export class CredentialFile {
  readonly path: string;

  constructor(dataDir: string) {
    this.path = join(dataDir, CREDENTIAL_FILE);
  }

  /** The stored identity; null when none was stored. A file that cannot be read is fatal (exit 2). */
  async load(): Promise<AgentIdentity | null> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new AgentFatal(`cannot read the host credential ${this.path}: ${(err as Error).message}`, 2);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (!isIdentity(parsed))
      throw new AgentFatal(
        `${this.path} is not a host credential gantry agent wrote: remove it, and join again with a new token (gantry hosts token create)`,
        2,
      );
    // A file loosened by hand (or restored from a backup) is tightened: it is a secret.
    const { mode } = await stat(this.path);
    if ((mode & 0o077) !== 0) await chmod(this.path, 0o600);
    return parsed;
  }

  async save(identity: AgentIdentity): Promise<void> {
    await writeFileAtomic(this.path, `${JSON.stringify(identity, null, 2)}\n`);
  }
}
