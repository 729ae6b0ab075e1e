import { randomFillSync } from 'node:crypto';

let lastMs = 0;
let seq = 0;

// Random bytes are drawn 4 KiB at a time: one randomBytes(16) call per id
// cost a quarter of the ingest process's CPU under load.
const POOL_IDS = 256;
const pool = Buffer.alloc(POOL_IDS * 8);
let poolUsed = POOL_IDS;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * A UUIDv7: 48 bits of Unix milliseconds, then random bits. Ids sort by
 * creation time, so "newest first" paging and the spec's `before` cursor
 * ("ids less than this value") are one index scan on the primary key.
 * Within one millisecond a 12-bit counter keeps ids of this process ordered.
 */
export function newId(now = Date.now()): string {
  if (now <= lastMs) {
    seq++;
    if (seq > 0xfff) {
      lastMs++;
      seq = 0;
    }
  } else {
    lastMs = now;
    seq = 0;
  }
  if (poolUsed === POOL_IDS) {
    randomFillSync(pool);
    poolUsed = 0;
  }
  const r = poolUsed++ * 8;
  const ms = lastMs;
  const hi = Math.floor(ms / 2 ** 32);
  return (
    HEX[(hi >>> 8) & 0xff] + HEX[hi & 0xff] + HEX[(ms >>> 24) & 0xff] + HEX[(ms >>> 16) & 0xff] + '-' +
    HEX[(ms >>> 8) & 0xff] + HEX[ms & 0xff] + '-' +
    HEX[0x70 | ((seq >>> 8) & 0x0f)] + HEX[seq & 0xff] + '-' +
    HEX[(pool[r] & 0x3f) | 0x80] + HEX[pool[r + 1]] + '-' +
    HEX[pool[r + 2]] + HEX[pool[r + 3]] + HEX[pool[r + 4]] + HEX[pool[r + 5]] + HEX[pool[r + 6]] + HEX[pool[r + 7]]
  );
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_RE.test(value);
}

/** The smallest UUIDv7 of a millisecond: every id made at or after `ms` is >= it, every id made before is <. */
export function idFloor(ms: number): string {
  const h = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7000-8000-000000000000`;
}
