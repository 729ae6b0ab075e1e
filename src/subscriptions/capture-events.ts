import type { Db, Queryable } from '../db/db.ts';
import { listEndpoints } from '../endpoints/endpoints.ts';
import { idFloor, idTime } from '../requests/capture-ids.ts';
import { capturesBetween } from '../requests/captures.ts';
import { presentCapture } from '../requests/present.ts';
import { insertEvents } from './emit.ts';

/**
 * request.captured events are produced after the capture commits, never in
 * the capture statement: ingest does no work per capture for subscriptions.
 * Each request.captured subscription keeps a cursor (the last capture id it
 * announced); a tick on any node reads the captures after it, queues their
 * events and moves the cursor on, in one transaction under the
 * subscription's row lock (SKIP LOCKED: nodes share the subscriptions).
 * A crash before the commit leaves the cursor where it was: the captures
 * are durable, so the next tick announces them. A re-run never queues one
 * twice (a unique index on the event's source).
 *
 * Capture ids are UUIDv7 stamped when the request arrived, and a capture
 * commits a moment later, so the cursor only passes ids older than
 * SETTLE_MS: a capture whose commit took longer than that after its arrival
 * would be passed over (docs/subscriptions.md says so).
 */
export const SETTLE_MS = 3_000;
/** Captures announced per subscription per tick; a longer backlog continues on the next tick. */
export const CAPTURE_BATCH = 200;
const SUBSCRIPTIONS_PER_TICK = 100;

interface CursorRow {
  id: string;
  organization_id: string;
  endpoint_id: string | null;
  capture_cursor: string | null;
}

/** One pass over the request.captured subscriptions; returns how many events it queued. */
export async function produceCaptureEvents(db: Db, o: { settleMs?: number } = {}): Promise<number> {
  return db.transaction(async (tx) => {
    const { rows: subs } = await tx.query<CursorRow & { db_now: Date }>(
      `select id, organization_id, endpoint_id, capture_cursor, now() as db_now from subscriptions
        where status <> 'unsubscribed' and 'request.captured' = any(event_types)
        order by id limit $1
          for update skip locked`,
      [SUBSCRIPTIONS_PER_TICK],
    );
    if (subs.length === 0) return 0;
    const settled = idFloor(new Date(subs[0].db_now).getTime() - (o.settleMs ?? SETTLE_MS));
    let queued = 0;
    for (const s of subs) queued += await announce(tx, s, settled);
    return queued;
  });
}

async function announce(tx: Queryable, s: CursorRow, settled: string): Promise<number> {
  // a new subscription announces captures from its own creation on (its id is a UUIDv7)
  const after = s.capture_cursor ?? idFloor(idTime(s.id) - 1);
  if (after >= settled) return 0;
  const endpointIds = s.endpoint_id ? [s.endpoint_id] : (await listEndpoints(tx, s.organization_id)).map((e) => e.id);
  const captures = await capturesBetween(tx, endpointIds, after, settled, CAPTURE_BATCH);
  const queued = await insertEvents(
    tx,
    captures.map((c) => ({
      subscriptionId: s.id,
      event: { organizationId: s.organization_id, type: 'request.captured', endpointId: c.endpoint_id, sourceId: c.id, data: { object: presentCapture(c) } },
    })),
  );
  const cursor = captures.length === CAPTURE_BATCH ? captures[captures.length - 1].id : settled;
  await tx.query(`update subscriptions set capture_cursor = $2::uuid where id = $1::uuid`, [s.id, cursor]);
  return queued;
}
