import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/** AES-256-GCM encryption of secrets at rest. Ciphertext format: base64(iv).base64(tag).base64(data). */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('The secret key must be 32 bytes');
    this.#key = key;
  }

  /** Accepts 64 hex characters or base64 of 32 bytes. */
  static fromString(text: string): SecretBox {
    const trimmed = text.trim();
    const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
    return new SecretBox(key);
  }

  static generateKey(): string {
    return randomBytes(32).toString('hex');
  }

  /**
   * A 32-byte key for one purpose, derived from this key (HMAC-SHA256 of the purpose's name): what
   * it signs cannot be forged without the secret key, and every replica sharing the key derives the
   * same one.
   */
  derive(purpose: string): Buffer {
    return createHmac('sha256', this.#key).update(`gantry derived key: ${purpose}`).digest();
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [iv, cipher.getAuthTag(), data].map((b) => b.toString('base64')).join('.');
  }

  open(sealed: string): string {
    const [iv, tag, data] = sealed.split('.').map((p) => Buffer.from(p, 'base64'));
    if (!iv || !tag || !data) throw new Error('Malformed sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
  }
}
