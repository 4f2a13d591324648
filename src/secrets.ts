import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Unix seconds as capability() writes them: decimal digits, no leading zero, at most 15 digits. */
const CANONICAL_SECONDS = /^(?:0|[1-9][0-9]{0,14})$/;

/** The id of the key from TERRACE_SECRET_KEY or <dataDir>/secret.key. */
export const DEFAULT_KEY_ID = 'default';

/** What a listed key id may be: it is written into ciphertexts and blob headers, so no dots. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

export interface ServerKey {
  id: string;
  material: Buffer;
}

/** Thrown when a ciphertext names (or needs) a key this process was not given. */
export class UnknownKeyError extends Error {
  constructor(readonly keyId: string) {
    super(`the key "${keyId}" is not configured: add it back to TERRACE_ENCRYPTION_KEYS (or restore TERRACE_SECRET_KEY / secret.key for "default")`);
  }
}

/**
 * The server keys: the first is current (it signs, encrypts and wraps from now on); every one
 * decrypts and verifies, so data and signed URLs made under an older key keep working until a
 * rotation has moved everything off it. Purpose-specific subkeys are derived with HKDF so one
 * leak of a derived key exposes nothing else.
 */
export class Secrets {
  private readonly keys: ServerKey[];
  private readonly subkeys = new Map<string, Buffer>();

  constructor(keys: ServerKey[] | Buffer) {
    this.keys = Buffer.isBuffer(keys) ? [{ id: DEFAULT_KEY_ID, material: keys }] : keys;
    if (this.keys.length === 0) throw new Error('at least one server key is required');
  }

  /**
   * Listed keys (TERRACE_ENCRYPTION_KEYS, first is current) plus "default": TERRACE_SECRET_KEY,
   * else <dataDir>/secret.key. The file is generated only when nothing at all is configured.
   */
  static load(dataDir: string, configured: string | undefined, listed: ServerKey[] = []): { secrets: Secrets; generated: boolean } {
    const keys = [...listed];
    if (configured) return { secrets: new Secrets([...keys, { id: DEFAULT_KEY_ID, material: Buffer.from(configured, 'utf8') }]), generated: false };
    const file = path.join(dataDir, 'secret.key');
    try {
      const hex = fs.readFileSync(file, 'utf8').trim();
      return { secrets: new Secrets([...keys, { id: DEFAULT_KEY_ID, material: Buffer.from(hex, 'hex') }]), generated: false };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (keys.length > 0) return { secrets: new Secrets(keys), generated: false };
    fs.mkdirSync(dataDir, { recursive: true });
    const key = randomBytes(32);
    // 'wx' refuses to overwrite a key another process wrote first.
    fs.writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    return { secrets: new Secrets(key), generated: true };
  }

  get currentKeyId(): string {
    return this.keys[0]!.id;
  }

  get keyIds(): string[] {
    return this.keys.map((k) => k.id);
  }

  hasKey(id: string): boolean {
    return this.keys.some((k) => k.id === id);
  }

  /** Derived once per key and purpose: HKDF on every signature would sit on the download hot path. */
  subkey(purpose: string, keyId = this.currentKeyId): Buffer {
    const cacheKey = `${keyId}\0${purpose}`;
    let sub = this.subkeys.get(cacheKey);
    if (!sub) {
      const key = this.keys.find((k) => k.id === keyId);
      if (!key) throw new UnknownKeyError(keyId);
      sub = Buffer.from(hkdfSync('sha256', key.material, Buffer.alloc(0), `terrace:${purpose}`, 32));
      this.subkeys.set(cacheKey, sub);
    }
    return sub;
  }

  /** base64url HMAC-SHA256 of message under the current key's subkey for purpose. */
  sign(purpose: string, message: string, keyId = this.currentKeyId): string {
    return createHmac('sha256', this.subkey(purpose, keyId)).update(message).digest('base64url');
  }

  /** Constant-time check of a signature made by sign() under any configured key. */
  verify(purpose: string, message: string, signature: string): boolean {
    const given = Buffer.from(signature);
    let ok = false;
    for (const { id } of this.keys) {
      const expected = Buffer.from(this.sign(purpose, message, id));
      if (expected.length === given.length && timingSafeEqual(expected, given)) ok = true;
    }
    return ok;
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
    const digits = capability.slice(0, dot);
    // Only the form capability() writes: no sign, spaces, leading zeros, hex or exponent, so a
    // URL has one spelling and a tampered one is refused before anything is verified.
    if (dot < 1 || !CANONICAL_SECONDS.test(digits)) return false;
    const expires = Number(digits);
    if (!this.verify(purpose, `${subject}:${expires}`, capability.slice(dot + 1))) return false;
    return expires * 1000 > now.getTime();
  }

  /**
   * AES-256-GCM for secrets that must be read back (sensitive outputs, HMAC keys, VCS tokens):
   * "v2.<key id>.<iv>.<tag>.<ciphertext>". The "v1." form (no key id, made by "default") still
   * decrypts. Neither form can be mistaken for JSON text, so a column may mix them with JSON.
   */
  encrypt(plaintext: string): string {
    const keyId = this.currentKeyId;
    const { iv, tag, ct } = seal(this.subkey('encryption', keyId), Buffer.from(plaintext, 'utf8'));
    return ['v2', keyId, iv, tag, ct].join('.');
  }

  decrypt(sealed: string): string {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const [, keyId, iv, tag, ct] = parts as [string, string, string, string, string];
      return open(this.subkey('encryption', keyId), iv, tag, ct).toString('utf8');
    }
    if (parts[0] !== 'v1' || parts.length !== 4) throw new Error('unrecognized ciphertext');
    const [, iv, tag, ct] = parts as [string, string, string, string];
    // v1 carried no key id; it was always made by the single key that is now "default".
    const order = [DEFAULT_KEY_ID, ...this.keyIds.filter((id) => id !== DEFAULT_KEY_ID)].filter((id) => this.hasKey(id));
    for (const id of order) {
      try {
        return open(this.subkey('encryption', id), iv, tag, ct).toString('utf8');
      } catch {
        // The GCM tag decides which key made it; try the next.
      }
    }
    throw new UnknownKeyError(DEFAULT_KEY_ID);
  }

  /** The key id a value from encrypt() was made under ("default" for v1), or null if it is not one. */
  static sealedKeyId(value: string): string | null {
    if (value.startsWith('v1.')) return DEFAULT_KEY_ID;
    if (!value.startsWith('v2.')) return null;
    const end = value.indexOf('.', 3);
    return end > 3 ? value.slice(3, end) : null;
  }

  /** A blob's data key, wrapped by the current key; the data key id is bound in, so a row cannot be swapped. */
  wrapDataKey(dataKeyId: string, dataKey: Buffer): { keyId: string; wrapped: string } {
    const keyId = this.currentKeyId;
    const { iv, tag, ct } = seal(this.subkey('data-keys', keyId), dataKey, Buffer.from(dataKeyId));
    return { keyId, wrapped: [iv, tag, ct].join('.') };
  }

  unwrapDataKey(dataKeyId: string, keyId: string, wrapped: string): Buffer {
    const [iv, tag, ct] = wrapped.split('.');
    if (!iv || !tag || ct === undefined) throw new Error(`data key ${dataKeyId} is malformed`);
    return open(this.subkey('data-keys', keyId), iv, tag, ct, Buffer.from(dataKeyId));
  }
}

function seal(key: Buffer, plaintext: Buffer, aad?: Buffer): { iv: string; tag: string; ct: string } {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad) cipher.setAAD(aad);
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv: iv.toString('base64url'), tag: cipher.getAuthTag().toString('base64url'), ct: ct.toString('base64url') };
}

function open(key: Buffer, iv: string, tag: string, ct: string, aad?: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]);
}
