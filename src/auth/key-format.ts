import { createHash, randomInt } from 'node:crypto';

/**
 * Key form: `wr_live_{region}_{secret}`. The fixed prefix carries the `live`
 * segment the specification asks for; the secret is 32 base62 characters
 * from a CSPRNG (190 bits) followed by a 6-character base62 CRC-32 of
 * everything before it, as GitHub tokens have: a mistyped or truncated key is
 * refused without a database round trip, and secret scanners can recognise a
 * Weir key with a regular expression.
 */
export const KEY_PREFIX = 'wr_live';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_RE = new RegExp(`^${KEY_PREFIX}_([a-z0-9]{2,16})_([0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}})$`);

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(s: string): number {
  let c = 0xffffffff;
  for (const byte of Buffer.from(s, 'utf8')) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function base62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateKey(region: string): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += ALPHABET[randomInt(62)];
  const body = `${KEY_PREFIX}_${region}_${random}`;
  return body + base62(crc32(body), CHECKSUM_LENGTH);
}

/** Whether a string has the shape and checksum of a Weir key (says nothing of whether it exists). */
export function isWellFormedKey(key: string): boolean {
  const m = KEY_RE.exec(key);
  if (!m) return false;
  const body = key.slice(0, key.length - CHECKSUM_LENGTH);
  return base62(crc32(body), CHECKSUM_LENGTH) === key.slice(-CHECKSUM_LENGTH);
}

export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** What stays visible after creation: the prefix, region and the first four secret characters. */
export function displayPrefix(key: string): string {
  const m = KEY_RE.exec(key);
  return m ? `${KEY_PREFIX}_${m[1]}_${m[2].slice(0, 4)}` : key.slice(0, 12);
}
