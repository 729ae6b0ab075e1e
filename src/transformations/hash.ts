import { createHash } from 'node:crypto';

/** The hash a transformation's code version is known by: attempts record it, destinations show it. */
export function codeHash(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}
