import type { Queryable } from '../db/db.ts';

export interface EventLogRow {
  id: string;
  event_type: string;
  status: string;
  attempt_count: number;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  created_at: Date;
}

/** A subscription's events, newest first: what was sent, how it went, what waits for a retry. */
export async function listSubscriptionEvents(db: Queryable, subscriptionId: string, o: { limit: number; before?: string }): Promise<EventLogRow[]> {
  const { rows } = await db.query<EventLogRow>(
    `select id, event_type, status, attempt_count, next_attempt_at, last_status_code, last_error, last_attempt_at, created_at
       from subscription_events where subscription_id = $1::uuid and ($2::uuid is null or id < $2::uuid)
      order by id desc limit $3`,
    [subscriptionId, o.before ?? null, o.limit + 1],
  );
  return rows;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function presentEvent(r: EventLogRow) {
  return {
    id: r.id,
    webhook_id: `evt_${r.id}`,
    type: r.event_type,
    status: r.status,
    attempt_count: r.attempt_count,
    next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    last_status_code: r.last_status_code,
    last_error: r.last_error,
    last_attempt_at: iso(r.last_attempt_at),
    created_at: iso(r.created_at),
  };
}
