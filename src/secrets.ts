import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The server key: from TERRACE_SECRET_KEY, or generated once into <dataDir>/secret.key (0600).
 * Purpose-specific subkeys are derived with HKDF so one leak of a derived key exposes nothing else.
 */
export class Secrets {
  private readonly root: Buffer;

  constructor(rootKey: Buffer) {
    this.root = rootKey;
  }

  static load(dataDir: string, configured: string | undefined): { secrets: Secrets; generated: boolean } {
    if (configured) return { secrets: new Secrets(Buffer.from(configured, 'utf8')), generated: false };
    const file = path.join(dataDir, 'secret.key');
    try {
      const hex = fs.readFileSync(file, 'utf8').trim();
      return { secrets: new Secrets(Buffer.from(hex, 'hex')), generated: false };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    fs.mkdirSync(dataDir, { recursive: true });
    const key = randomBytes(32);
    // 'wx' refuses to overwrite a key another process wrote first.
    fs.writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    return { secrets: new Secrets(key), generated: true };
  }

  private readonly subkeys = new Map<string, Buffer>();

  /** Derived once per purpose: HKDF on every signature would sit on the download hot path. */
  subkey(purpose: string): Buffer {
    let key = this.subkeys.get(purpose);
    if (!key) {
      key = Buffer.from(hkdfSync('sha256', this.root, Buffer.alloc(0), `terrace:${purpose}`, 32));
      this.subkeys.set(purpose, key);
    }
    return key;
  }

  /** base64url HMAC-SHA256 of message under the purpose's subkey. */
  sign(purpose: string, message: string): string {
    return createHmac('sha256', this.subkey(purpose)).update(message).digest('base64url');
  }

  /** Constant-time check of a signature made by sign(). */
  verify(purpose: string, message: string, signature: string): boolean {
    const expected = Buffer.from(this.sign(purpose, message));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /**
   * A capability for a URL path segment, "<expiry>.<signature>": binds the subject (what the URL
   * opens) to an expiry, so the URL needs no other credential.
   */
  capability(purpose: string, subject: string, expiresAt: Date): string {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    return `${expires}.${this.sign(purpose, `${subject}:${expires}`)}`;
  }

  /** True only for an untampered capability for this subject that has not expired at now. */
  checkCapability(purpose: string, subject: string, capability: string, now: Date): boolean {
    const dot = capability.indexOf('.');
    const expires = Number(capability.slice(0, dot));
    if (dot < 1 || !Number.isSafeInteger(expires)) return false;
    if (!this.verify(purpose, `${subject}:${expires}`, capability.slice(dot + 1))) return false;
    return expires * 1000 > now.getTime();
  }

  /** AES-256-GCM for secrets that must be read back (HMAC keys, VCS tokens). */
  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.subkey('encryption'), iv);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  decrypt(sealed: string): string {
    const [v, iv, tag, ct] = sealed.split('.');
    if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('unrecognized ciphertext');
    const decipher = createDecipheriv('aes-256-gcm', this.subkey('encryption'), Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
