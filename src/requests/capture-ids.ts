/**
 * Capture ids are UUIDv7 (src/db/ids.ts) and a capture's received_at is the
 * millisecond its id carries. So an id alone names the day partition it is
 * in, and "ids before X" is "received at or before X's millisecond": both let
 * PostgreSQL skip every other partition.
 */
export function idTime(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** The smallest UUIDv7 of a millisecond: every id made at or after `ms` is >= it, every id made before is <. */
export function idFloor(ms: number): string {
  const h = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7000-8000-000000000000`;
}
