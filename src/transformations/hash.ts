import { createHash } from 'node:crypto';

/** Hashes of the code versions seen lately: a delivery needs its code's hash twice (the sandbox's key, the attempt), for each forward. */
const recent = new Map<string, string>();
const RECENT_MAX = 256;

/** The hash a transformation's code version is known by: attempts record it, destinations show it. */
export function codeHash(code: string): string {
  const hit = recent.get(code);
  if (hit !== undefined) return hit;
  const hash = createHash('sha256').update(code).digest('hex');
  if (recent.size >= RECENT_MAX) recent.delete(recent.keys().next().value as string);
  recent.set(code, hash);
  return hash;
}
