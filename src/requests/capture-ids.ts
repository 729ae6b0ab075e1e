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
