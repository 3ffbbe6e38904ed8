const KEY_TYPES = new Set([
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);

export type KeyCheck = { ok: true; line: string } | { ok: false; reason: string };

/**
 * Checks one authorized_keys line: `<type> <base64 blob> [comment]`, where the blob decodes to
 * a key whose embedded type name matches the declared type. Options before the type are refused:
 * the platform writes these lines, so users cannot smuggle `command=` into them.
 */
export function validateAuthorizedKey(input: string): KeyCheck {
  if (typeof input !== 'string') return { ok: false, reason: 'must be a string' };
  const line = input.trim();
  if (line.length === 0) return { ok: false, reason: 'is empty' };
  if (line.length > 16_384) return { ok: false, reason: 'is longer than 16 KiB' };
  if (/[\r\n]/.test(line)) return { ok: false, reason: 'must be a single line' };
  const [type, blob, ...comment] = line.split(/\s+/);
  if (!type || !KEY_TYPES.has(type))
    return { ok: false, reason: `key type "${type ?? ''}" is not a supported SSH public key type` };
  if (!blob || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) return { ok: false, reason: 'the key data is not base64' };
  const raw = Buffer.from(blob, 'base64');
  if (raw.length < 4) return { ok: false, reason: 'the key data is truncated' };
  const nameLength = raw.readUInt32BE(0);
  if (nameLength > raw.length - 4) return { ok: false, reason: 'the key data is truncated' };
  const embedded = raw.subarray(4, 4 + nameLength).toString('latin1');
  if (embedded !== type) return { ok: false, reason: `the key data is a "${embedded}" key, not "${type}"` };
  return { ok: true, line: [type, blob, ...comment].join(' ') };
}
