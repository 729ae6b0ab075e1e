/**
 * Capture ids are UUIDv7 (src/db/ids.ts) and a capture's received_at is the
 * millisecond its id carries. So an id alone names the day partition it is
 * in, and "ids before X" is "received at or before X's millisecond": both let
 * PostgreSQL skip every other partition.
 */
export function idTime(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

// idFloor, the other half of this, is src/db/ids.ts's: every time-ordered id uses it.
export { idFloor } from '../db/ids.ts';

// PostgreSQL stores timestamps up to the year 294276, but it cannot read the
// ISO text JavaScript writes for years past 9999 ("+010889-...") or before 1.
// A UUIDv7's 48-bit time reaches the year 10889, so a client's far-future
// cursor or id (ffffffff-ffff-...) answered 500 (issue 23, defect 3). Every
// time derived from client input goes through isoTime, clamped to years
// 1-9999: no capture is anywhere near either bound, so the clamped query
// answers what the unclamped one meant (nothing before the year 1, all
// before the year 10889).
const MIN_MS = -62_135_596_800_000; // 0001-01-01T00:00:00.000Z
const MAX_MS = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z

/** A millisecond as ISO text PostgreSQL can read, clamped to years 1-9999. */
export function isoTime(ms: number): string {
  return new Date(Math.min(MAX_MS, Math.max(MIN_MS, ms))).toISOString();
}

/** The time an id carries (idTime), as ISO text PostgreSQL can read, whatever the id. */
export function idTimestamp(id: string): string {
  return isoTime(idTime(id));
}
