import { notify, type Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { eventBody, type EventType } from './event-types.ts';

/** Event workers LISTEN here; one notification per transaction that queued events. */
export const EVENTS_CHANNEL = 'weir_events';
/** The request.captured producer LISTENs here; the capture statement notifies when it wrote announcements. */
export const CAPTURES_CHANNEL = 'weir_captures';

export interface NewEvent {
  organizationId: string;
  type: EventType;
  /** request.* events: the endpoint, so a subscription narrowed to another endpoint does not get it. */
  endpointId?: string | null;
  /** Makes the event idempotent per subscription (a capture id): queued at most once. */
  sourceId?: string | null;
  data: unknown;
}

/** An event whose data is built only when someone subscribes (it may cost a query). */
export type LazyEvent = Omit<NewEvent, 'data'> & { data: () => unknown };

interface Target {
  id: string;
}

/** The organization's subscriptions that want an event (unsubscribed ones never do). */
async function subscribersOf(tx: Queryable, e: Pick<NewEvent, 'organizationId' | 'type' | 'endpointId'>): Promise<Target[]> {
  const { rows } = await tx.query<Target>(
    `select id from subscriptions
      where organization_id = $1::uuid and $2 = any(event_types) and status <> 'unsubscribed'
        and (endpoint_id is null or $3::uuid is null or endpoint_id = $3::uuid)
      order by id`,
    [e.organizationId, e.type, e.endpointId ?? null],
  );
  return rows;
}

/**
 * Queues an event for every subscription that wants it, in the caller's
 * transaction: the event commits with what caused it (an incident's status,
 * a replay batch finishing) or not at all, so none is lost across a crash.
 * Costs one indexed query when nobody subscribes. Returns how many were queued.
 */
export async function emitEvent(tx: Queryable, e: LazyEvent): Promise<number> {
  const subs = await subscribersOf(tx, e);
  if (subs.length === 0) return 0;
  const event: NewEvent = { ...e, data: await e.data() };
  return insertEvents(
    tx,
    subs.map((s) => ({ subscriptionId: s.id, event })),
  );
}

/**
 * Queues a batch of events of one type (each of its organization and
 * endpoint) with one query for their subscribers; `data` of an event runs
 * only when someone subscribes to it. Returns how many were queued.
 */
export async function emitEvents(tx: Queryable, type: EventType, events: ReadonlyArray<LazyEvent>): Promise<number> {
  if (events.length === 0) return 0;
  const { rows: subs } = await tx.query<{ id: string; organization_id: string; endpoint_id: string | null }>(
    `select id, organization_id, endpoint_id from subscriptions
      where organization_id = any($1::uuid[]) and $2 = any(event_types) and status <> 'unsubscribed' order by id`,
    [[...new Set(events.map((e) => e.organizationId))], type],
  );
  if (subs.length === 0) return 0;
  const rows: Array<{ subscriptionId: string; event: NewEvent }> = [];
  for (const e of events) {
    const wanting = subs.filter((s) => s.organization_id === e.organizationId && (s.endpoint_id === null || !e.endpointId || s.endpoint_id === e.endpointId));
    if (wanting.length === 0) continue;
    const event: NewEvent = { ...e, data: await e.data() };
    for (const s of wanting) rows.push({ subscriptionId: s.id, event });
  }
  return insertEvents(tx, rows);
}

/**
 * Inserts events (one per subscription and event) and wakes the workers on
 * commit; a source already queued is skipped. Each subscription that got
 * one is marked due (events_due_at, what the claim reads): its row is
 * locked first, in id order, so concurrent emitters cannot deadlock and a
 * completion that recomputes the due time waits for this commit.
 */
export async function insertEvents(tx: Queryable, rows: ReadonlyArray<{ subscriptionId: string; event: NewEvent }>): Promise<number> {
  if (rows.length === 0) return 0;
  const now = new Date();
  const ids = rows.map(() => newId());
  const subscriptionIds = [...new Set(rows.map((r) => r.subscriptionId))].sort();
  await tx.query(`select id from subscriptions where id = any($1::uuid[]) order by id for no key update`, [subscriptionIds]);
  // an event fanned out to many subscriptions is serialised once
  const data = new Map<NewEvent, string>();
  const { rows: inserted } = await tx.query<{ subscription_id: string }>(
    `insert into subscription_events (id, organization_id, subscription_id, event_type, source_id, payload)
     select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::uuid[], $6::text[])
     on conflict (subscription_id, source_id) where source_id is not null do nothing
     returning subscription_id`,
    [
      ids,
      rows.map((r) => r.event.organizationId),
      rows.map((r) => r.subscriptionId),
      rows.map((r) => r.event.type),
      rows.map((r) => r.event.sourceId ?? null),
      rows.map((r, i) => {
        let json = data.get(r.event);
        if (json === undefined) data.set(r.event, (json = JSON.stringify(r.event.data)));
        return eventBody(ids[i], r.event.type, json, now);
      }),
    ],
  );
  if (inserted.length === 0) return 0;
  await tx.query(`update subscriptions set events_due_at = least(events_due_at, now()) where id = any($1::uuid[])`, [[...new Set(inserted.map((r) => r.subscription_id))]]);
  await notify(tx, EVENTS_CHANNEL, '');
  return inserted.length;
}
