/**
 * Who may open a session through the SSH proxy: the `username` is a pod's routing token, the key
 * one of its account's registered SSH public keys, the pod created with `startSsh` and RUNNING.
 *
 * Every refusal looks the same from outside: the same answer (`Permission denied (publickey)`),
 * after the same reads (the pod by token, then an account's keys — an empty account id's when the
 * token names no pod), so neither the message nor the time tells which pods exist, which account
 * holds them, or whether they run.
 */
import ssh2, { type ParsedKey } from 'ssh2';
import type { SshPod } from '../pods/pods-service.js';

/** What a session is opened into. */
export interface SshTarget {
  podId: string;
  accountId: string;
}

/** A public key as the client offers it (`ssh2`'s publickey context). */
export interface OfferedKey {
  algo: string;
  data: Buffer;
}

/** A signed publickey request: what is signed and the signature (absent when the client only asks whether a key would do). */
export interface KeySignature {
  blob: Buffer;
  signature: Buffer;
  hashAlgo?: string | undefined;
}

export interface SshAuthorizerDeps {
  /** the pod a routing token names (any status), or null */
  podByToken(token: string): Promise<SshPod | null>;
  /** an account's authorized_keys lines; none for an unknown account */
  keysOf(accountId: string): Promise<string[]>;
}

/** Longest username looked up; longer ones are looked up as '' (no token is that long). */
const MAX_TOKEN_LENGTH = 64;

export class SshAuthorizer {
  constructor(private readonly d: SshAuthorizerDeps) {}

  /**
   * The pod a session may be opened into with this key, or null. Without `signed`, whether the
   * key would be accepted (the client's query before it signs); with it, the signature is checked too.
   */
  async authorize(username: string, offered: OfferedKey, signed?: KeySignature): Promise<SshTarget | null> {
    const token = username.length <= MAX_TOKEN_LENGTH ? username : '';
    const pod = await this.d.podByToken(token);
    const keys = await this.d.keysOf(pod?.accountId ?? '');
    const key = matchingKey(keys, offered);
    if (!pod || !key || pod.status !== 'RUNNING' || !pod.startSsh) return null;
    if (signed && key.verify(signed.blob, signed.signature, signed.hashAlgo) !== true) return null;
    return { podId: pod.id, accountId: pod.accountId };
  }
}

/** The registered key whose public blob is the offered one. */
function matchingKey(lines: string[], offered: OfferedKey): ParsedKey | null {
  for (const line of lines) {
    const parsed = ssh2.utils.parseKey(line);
    const key = Array.isArray(parsed) ? parsed[0] : parsed;
    if (!key || key instanceof Error) continue;
    if (key.getPublicSSH().equals(offered.data)) return key;
  }
  return null;
}
