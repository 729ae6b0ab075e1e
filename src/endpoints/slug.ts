import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
export const SLUG_LENGTH = 16;
/** What the ingest listener accepts as a slug before asking the database (older slugs may differ in length). */
export const SLUG_PATTERN = /^[a-z0-9]{1,64}$/;

/**
 * 16 lowercase alphanumerics from the CSPRNG: about 82 bits, so slugs cannot
 * be guessed or enumerated. Rejection sampling (bytes >= 252 are skipped)
 * keeps every character uniformly likely; a plain `byte % 36` would favour
 * the first letters.
 */
export function generateSlug(): string {
  let out = '';
  while (out.length < SLUG_LENGTH) {
    for (const byte of randomBytes(SLUG_LENGTH * 2)) {
      if (byte >= 252) continue;
      out += ALPHABET[byte % 36];
      if (out.length === SLUG_LENGTH) break;
    }
  }
  return out;
}
