import type { Db } from '../db/db.ts';
import { idTime } from '../requests/capture-ids.ts';
import { capturesByIds } from '../requests/captures.ts';
import { presentCapture } from '../requests/present.ts';
import { insertEvents, type NewEvent } from './emit.ts';

/**
 * request.captured events come from an outbox, not from a cursor over the
 * captures: the capture statement (src/ingest/store.ts) writes a
 * capture_announcements row for every capture of an endpoint a live
 * request.captured subscription covers, in the statement that stores the
 * capture, and the producer below turns rows into events and deletes them
 * in one transaction. Hence, in one sentence: every capture that commits
 * has its outbox row committed with it, and that row stays until a
 * transaction that queued its events commits, so each capture is announced
 * once however long its commit took (a re-run after a crash mid-way is
 * skipped by the unique index on the event's source).
 *
 * One producer runs at a time across nodes (a transaction-level advisory
 * lock), so a subscription's request.captured events are queued in the
 * order the producer took them: capture id order within a batch, and a
 * capture that committed late comes after the captures announced before
 * it committed.
 */
export const CAPTURE_BATCH = 500;
const PRODUCER_LOCK_KEY = 7_420_913_210;

interface Announcement {
  capture_id: string;
  organization_id: string;
  endpoint_id: string;
  received_at: Date;
}

interface CaptureSubscription {
  id: string;
  organization_id: string;
  endpoint_id: string | null;
}

export interface ProduceResult {
  /** Outbox rows taken (CAPTURE_BATCH: there may be more). */
  taken: number;
  /** Events queued. */
  queued: number;
  /** Another node's producer holds the lock. */
  busy: boolean;
}

/** One batch of the outbox turned into events. */
export async function produceCaptureEvents(db: Db, o: { batch?: number } = {}): Promise<ProduceResult> {
  return db.transaction(async (tx) => {
    const { rows: lock } = await tx.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1) as ok', [PRODUCER_LOCK_KEY]);
    if (!lock[0].ok) return { taken: 0, queued: 0, busy: true };
    const { rows } = await tx.query<Announcement>(
      `select capture_id, organization_id, endpoint_id, received_at from capture_announcements order by capture_id limit $1`,
      [o.batch ?? CAPTURE_BATCH],
    );
    if (rows.length === 0) return { taken: 0, queued: 0, busy: false };
    const times = rows.map((r) => new Date(r.received_at).getTime());
    const captures = await capturesByIds(
      tx,
      rows.map((r) => r.capture_id),
      new Date(Math.min(...times)),
      new Date(Math.max(...times)),
    );
    const { rows: subs } = await tx.query<CaptureSubscription>(
      `select id, organization_id, endpoint_id from subscriptions
        where organization_id = any($1::uuid[]) and 'request.captured' = any(event_types) and status <> 'unsubscribed'
        order by id`,
      [[...new Set(rows.map((r) => r.organization_id))]],
    );
    const events: Array<{ subscriptionId: string; event: NewEvent }> = [];
    for (const c of captures) {
      const at = idTime(c.id);
      let event: NewEvent | undefined;
      for (const s of subs) {
        // a subscription announces the captures received from its creation on (its id is a UUIDv7)
        if (s.organization_id !== c.organization_id || (s.endpoint_id !== null && s.endpoint_id !== c.endpoint_id) || at < idTime(s.id)) continue;
        event ??= { organizationId: c.organization_id, type: 'request.captured', endpointId: c.endpoint_id, sourceId: c.id, data: { object: presentCapture(c) } };
        events.push({ subscriptionId: s.id, event });
      }
    }
    const queued = await insertEvents(tx, events);
    // a capture already gone (retention, endpoint deleted) has nothing to announce: its row goes too
    await tx.query(`delete from capture_announcements where capture_id = any($1::uuid[])`, [rows.map((r) => r.capture_id)]);
    return { taken: rows.length, queued, busy: false };
  });
}

/** Runs batches until the outbox is empty (or another node is producing); returns the events queued. */
export async function drainCaptureOutbox(db: Db, o: { batch?: number; stopping?: () => boolean } = {}): Promise<number> {
  let queued = 0;
  for (;;) {
    const r = await produceCaptureEvents(db, o);
    queued += r.queued;
    if (r.busy || r.taken < (o.batch ?? CAPTURE_BATCH) || o.stopping?.()) return queued;
  }
}
