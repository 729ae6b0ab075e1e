import type { Queryable } from '../db/db.ts';

/**
 * Late-capture notices: how the live tail (src/requests/tail.ts) learns of a
 * capture that became visible long after it arrived.
 *
 * The tail finds new captures by id, and a capture's id carries the
 * millisecond it arrived, not the one it committed. A look re-checks the
 * last LATE_WINDOW_MS of ids for captures that committed after newer ones
 * were pushed; a group whose commit took longer than that (a database
 * stall, a long fsync, a wait for a connection) would fall behind every
 * look. So the node that stored such a group says so: when a group's
 * commit returns more than LATE_NOTICE_MS after its oldest capture
 * arrived, the batcher NOTIFYs every node of the group's ids BEFORE it
 * acknowledges any of them, and each node's tail pushes those it has not
 * pushed. In one sentence: every acknowledged capture either committed
 * within the tail's late window of arriving, or a notice naming it was
 * sent to every node before it was acknowledged. Only slow groups pay the
 * notice; an ordinary group costs one comparison.
 */
export const LATE_CAPTURES_CHANNEL = 'weir_late_captures';

/** A group slower than this is announced (half the tail's LATE_WINDOW_MS, so the two overlap). */
export const LATE_NOTICE_MS = 5_000;

/** NOTIFY payloads must stay under 8,000 bytes: ids go in chunks well below it. */
const IDS_PER_NOTICE = 150;

export interface LateCapture {
  id: string;
  endpoint_id: string;
}

/** One notice's payload: `{"e":[endpoint ids],"i":[capture ids]}`, the two lists index-aligned. */
export function lateNoticePayloads(captures: readonly LateCapture[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < captures.length; i += IDS_PER_NOTICE) {
    const chunk = captures.slice(i, i + IDS_PER_NOTICE);
    out.push(JSON.stringify({ e: chunk.map((c) => c.endpoint_id), i: chunk.map((c) => c.id) }));
  }
  return out;
}

/** The captures a notice names; an unreadable payload names none. */
export function parseLateNotice(payload: string): LateCapture[] {
  try {
    const p = JSON.parse(payload) as { e?: unknown; i?: unknown };
    if (!Array.isArray(p.e) || !Array.isArray(p.i) || p.e.length !== p.i.length) return [];
    return p.i.map((id, k) => ({ id: String(id), endpoint_id: String((p.e as unknown[])[k]) }));
  } catch {
    return [];
  }
}

/** Sends the notices for `captures` (one statement, however many chunks). */
export async function announceLateCaptures(db: Queryable, captures: readonly LateCapture[]): Promise<void> {
  if (captures.length === 0) return;
  await db.query('select pg_notify($1, p) from unnest($2::text[]) as p', [LATE_CAPTURES_CHANNEL, lateNoticePayloads(captures)]);
}
