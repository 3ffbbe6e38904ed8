/**
 * The SSH proxy's host key: ed25519, generated on the first start into `<dataDir>/ssh_host_ed25519_key`
 * (mode 0600) and read from there after, so clients that trusted it keep trusting it across
 * restarts. Replicas sharing one database each have their own data dir: give them the same file
 * (docs/ssh.md), or clients will see the key change between replicas.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2, { type ParsedKey } from 'ssh2';

const { utils } = ssh2;

export const HOST_KEY_FILE = 'ssh_host_ed25519_key';

export interface HostKey {
  /** the private key, OpenSSH format */
  privateKey: string;
  path: string;
  /** `SHA256:…`, as `ssh-keygen -lf` and OpenSSH's prompts print it */
  fingerprint: string;
  /** whether this start created it */
  created: boolean;
}

export function loadHostKey(dataDir: string): HostKey {
  const path = join(dataDir, HOST_KEY_FILE);
  let created = false;
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const pair = utils.generateKeyPairSync('ed25519');
    // 'wx': two servers starting on one data dir never overwrite each other's key
    try {
      writeFileSync(path, pair.private, { mode: 0o600, flag: 'wx' });
      created = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  chmodSync(path, 0o600);
  const privateKey = readFileSync(path, 'utf8');
  const parsed = utils.parseKey(privateKey);
  const key: ParsedKey | undefined = Array.isArray(parsed) ? parsed[0] : parsed instanceof Error ? undefined : parsed;
  if (!key) throw new Error(`the SSH host key ${path} cannot be read: ${parsed instanceof Error ? parsed.message : 'no key in it'}`);
  const fingerprint = `SHA256:${createHash('sha256').update(key.getPublicSSH()).digest('base64').replace(/=+$/, '')}`;
  return { privateKey, path, fingerprint, created };
}
