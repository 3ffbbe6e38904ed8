/**
 * The SSH proxy's host key: ed25519, generated on the first start into `<dataDir>/ssh_host_ed25519_key`
 * (mode 0600) and read from there after, so clients that trusted it keep trusting it across
 * restarts. Replicas sharing one database each have their own data dir: give them the same file
 * (docs/ssh.md), or clients will see the key change between replicas.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
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

/**
 * A new ed25519 private key in OpenSSH format that parses back. ssh2's generator writes a key whose
 * public half lost a leading zero byte about once in 500 draws (a key nothing can read): such a draw
 * is thrown away.
 */
export function generateHostKey(generate: () => string = () => utils.generateKeyPairSync('ed25519').private): string {
  for (let attempt = 0; attempt < 20; attempt++) {
    const text = generate();
    const parsed = utils.parseKey(text);
    const key = Array.isArray(parsed) ? parsed[0] : parsed instanceof Error ? undefined : parsed;
    if (key && key.getPublicSSH().length === 51) return text;
  }
  throw new Error('could not generate an ed25519 SSH host key that parses');
}

export function loadHostKey(dataDir: string): HostKey {
  const path = join(dataDir, HOST_KEY_FILE);
  let created = false;
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const privateKeyText = generateHostKey();
    // Written whole under a name of its own, then linked into place: the key file appears complete
    // or not at all, and of two servers starting on one data dir the second keeps the first's key
    // (a reader never sees a file half written).
    const partial = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
    writeFileSync(partial, privateKeyText, { mode: 0o600, flag: 'wx' });
    try {
      linkSync(partial, path);
      created = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(partial);
    }
  }
  chmodSync(path, 0o600);
  const privateKey = readFileSync(path, 'utf8');
  const parsed = utils.parseKey(privateKey);
  const key: ParsedKey | undefined = Array.isArray(parsed) ? parsed[0] : parsed instanceof Error ? undefined : parsed;
  if (!key)
    throw new Error(
      `the SSH host key ${path} cannot be read: ${parsed instanceof Error ? parsed.message : 'no key in it'}`,
    );
  const fingerprint = `SHA256:${createHash('sha256').update(key.getPublicSSH()).digest('base64').replace(/=+$/, '')}`;
  return { privateKey, path, fingerprint, created };
}
