import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/db.ts';
import { leaseIdSql } from '../delivery/lease-id.ts';
import type { Decision } from '../delivery/retry-policy.ts';

/** An event delivery a worker holds the lease of, with its subscription's target and secrets. */
export interface ClaimedEvent {
  id: string;
  leaseId: string;
  subscriptionId: string;
  organizationId: string;
  eventType: string;
  payload: string;
  attemptNumber: number;
  targetUrl: string;
  /** The secrets that sign now: the current one, and the previous one during a rotation's overlap. */
  secrets: string[];
}

/**
 * Claims the next event of up to `limit` subscriptions, fairly: the claim
 * reads subscriptions, not events. A subscription is claimable when its
 * earliest pending event is due (events_due_at) and none of its events is
 * in flight; the longest-waiting ones go first, and each gives exactly one
 * event, its lowest-seq due one. So a subscription with a backlog of any
 * size, or one whose target times out, takes one slot per round like any
 * other, and a subscription gets its events one at a time, in the order
 * they were produced (a retried event can still arrive after later ones),
 * across nodes (SKIP LOCKED on the subscription rows; the in-flight flag is
 * committed with the claim).
 */
export async function claimEvents(db: Db, o: { limit: number; leaseMs: number }): Promise<ClaimedEvent[]> {
  const { rows } = await db.query<{
    id: string; lease_id: string; subscription_id: string; organization_id: string; event_type: string; payload: string;
    attempt_count: number; target_url: string; secret: string; previous_secret: string | null;
  }>(
    `with ready as materialized (
       select s.id, s.target_url, s.secret, case when s.previous_secret_expires_at > now() then s.previous_secret end as previous_secret
         from subscriptions s
        where s.events_due_at <= now() and not s.event_in_flight
        order by s.events_due_at
        limit $1
          for no key update skip locked
     ),
     pick as materialized (
       select r.*, e.id as event_id from ready r
        cross join lateral (select e.id from subscription_events e
                             where e.subscription_id = r.id and e.status = 'pending' and e.next_attempt_at <= now()
                             order by e.seq limit 1) e
     ),
     claimed as (
       update subscription_events e
          set status = 'in_flight', lease_until = now() + $2 * interval '1 millisecond', lease_id = ${leaseIdSql('$3', 'e.id')}, updated_at = now()
         from pick where e.id = pick.event_id and e.status = 'pending'
        returning e.*
     ),
     flagged as (
       update subscriptions s set event_in_flight = true from claimed c where s.id = c.subscription_id
     )
     select c.id, c.lease_id, c.subscription_id, c.organization_id, c.event_type, c.payload, c.attempt_count,
            p.target_url, p.secret, p.previous_secret
       from claimed c join pick p on p.event_id = c.id
      order by c.seq`,
    // $3: this claim's lease seed (leaseIdSql)
    [o.limit, o.leaseMs, randomUUID()],
  );
  return rows.map((r) => ({
    id: r.id,
    leaseId: r.lease_id,
    subscriptionId: r.subscription_id,
    organizationId: r.organization_id,
    eventType: r.event_type,
    payload: r.payload,
    attemptNumber: r.attempt_count + 1,
    targetUrl: r.target_url,
    secrets: r.previous_secret ? [r.secret, r.previous_secret] : [r.secret],
  }));
}

/** After this many failed attempts in a row a subscription is flagged failing (it keeps receiving). */
export const FAILING_AFTER = 5;

export interface EventOutcome {
  statusCode: number | null;
  error: string | null;
  decision: Decision;
  /** The target answered 410 Gone: the REST Hook way to unsubscribe. */
  gone: boolean;
}

/**
 * Records an attempt's outcome, if this worker still holds the lease, and
 * moves the subscription's health with it in the same transaction:
 * success clears the failing flag; a failure counts, and the
 * FAILING_AFTER-th in a row (or an event given up) flags the subscription
 * failing with the reason; 410 Gone unsubscribes it and its other waiting
 * events are failed. Returns false when the lease was lost.
 */
export async function completeEvent(db: Db, e: ClaimedEvent, o: EventOutcome): Promise<boolean> {
  return db.transaction(async (tx) => {
    // the subscription's row first, as the claim and the emitters take it: no deadlock, and the due time below sees every committed event
    await tx.query(`select id from subscriptions where id = $1::uuid for no key update`, [e.subscriptionId]);
    const status = o.gone ? 'failed' : o.decision.status;
    const delay = o.decision.status === 'pending' ? o.decision.delaySeconds : 0;
    const error = o.gone ? 'HTTP 410 Gone: the target unsubscribed' : o.decision.status === 'succeeded' ? null : o.error;
    const { rowCount } = await tx.query(
      `update subscription_events
          set status = $3, attempt_count = attempt_count + 1, next_attempt_at = now() + $4 * interval '1 second',
              lease_until = null, lease_id = null, last_status_code = $5, last_error = $6, last_attempt_at = now(), updated_at = now()
        where id = $1::uuid and lease_id = $2::uuid and status = 'in_flight'`,
      [e.id, e.leaseId, status, delay, o.statusCode, error],
    );
    if (rowCount === 0) return false;
    if (o.gone) {
      await tx.query(
        `update subscriptions set status = 'unsubscribed', status_reason = $2, last_failure_at = now(), updated_at = now() where id = $1::uuid`,
        [e.subscriptionId, `The target answered 410 Gone to event evt_${e.id}; no further events are sent.`],
      );
      await tx.query(
        `update subscription_events set status = 'failed', last_error = 'the subscription was unsubscribed (410 Gone)', updated_at = now()
          where subscription_id = $1::uuid and status = 'pending'`,
        [e.subscriptionId],
      );
    } else if (o.decision.status === 'succeeded') {
      await tx.query(
        `update subscriptions
            set consecutive_failures = 0, last_success_at = now(), failing_since = null,
                status = case when status = 'failing' then 'active' else status end,
                status_reason = case when status = 'failing' then null else status_reason end, updated_at = now()
          where id = $1::uuid`,
        [e.subscriptionId],
      );
    } else {
      const givenUp = o.decision.status !== 'pending';
      await tx.query(
        `update subscriptions
            set consecutive_failures = consecutive_failures + 1, last_failure_at = now(),
                failing_since = case when status = 'active' and (consecutive_failures + 1 >= $2 or $3) then now() else failing_since end,
                status_reason = case when status = 'active' and (consecutive_failures + 1 >= $2 or $3) then $4 else status_reason end,
                status = case when status = 'active' and (consecutive_failures + 1 >= $2 or $3) then 'failing' else status end,
                updated_at = now()
          where id = $1::uuid`,
        [e.subscriptionId, FAILING_AFTER, givenUp, `Deliveries fail: ${error ?? 'unknown error'}`],
      );
    }
    await tx.query(
      `update subscriptions
          set event_in_flight = false,
              events_due_at = (select min(next_attempt_at) from subscription_events where subscription_id = $1::uuid and status = 'pending')
        where id = $1::uuid`,
      [e.subscriptionId],
    );
    return true;
  });
}

/**
 * The statement that gives leases back ($2: the error to record, or null):
 * the in-flight events `where` picks
 * are due again now and their subscriptions claimable. Subscription rows are
 * locked first (in id order, SKIP LOCKED: one busy now is retried on the
 * next poll), as everywhere else.
 */
function giveBack(where: string): string {
  return `with subs as (
       select s.id from subscriptions s
        where s.id in (select subscription_id from subscription_events e where e.status = 'in_flight' and ${where})
        order by s.id for no key update skip locked
     ),
     moved as (
       update subscription_events e
          set status = 'pending', next_attempt_at = now(), lease_until = null, lease_id = null,
              last_error = coalesce($2::text, e.last_error), updated_at = now()
         from subs where e.subscription_id = subs.id and e.status = 'in_flight' and ${where}
       returning e.subscription_id
     ),
     flagged as (
       update subscriptions s set event_in_flight = false, events_due_at = least(s.events_due_at, now())
        where s.id in (select subscription_id from moved)
     )
     select count(*)::int as n from moved`;
}

/** Puts events whose lease ran out (their worker died) back in the queue, due now: at-least-once, hence the stable webhook-id. */
export async function requeueExpiredEvents(db: Queryable, opts: { everyLease?: boolean } = {}): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    giveBack('($1::boolean or e.lease_until < now())'),
    [opts.everyLease ?? false, 'lease expired: the worker stopped before recording an outcome'],
  );
  return rows[0].n;
}

/** Gives back leases this worker will not finish (shutdown): due again now, for any node. */
export async function releaseEventLeases(db: Queryable, leaseIds: readonly string[]): Promise<number> {
  if (leaseIds.length === 0) return 0;
  const { rows } = await db.query<{ n: number }>(giveBack('e.lease_id = any($1::uuid[])'), [leaseIds, null]);
  return rows[0].n;
}

/** When the next subscription becomes claimable, in this process's clock; null when none waits (one in flight is not waiting). */
export async function nextEventDueAt(db: Queryable): Promise<number | null> {
  const { rows } = await db.query<{ at: Date | null; db_now: Date }>(
    `select (select min(events_due_at) from subscriptions where events_due_at is not null and not event_in_flight) as at, now() as db_now`,
  );
  const r = rows[0];
  if (!r?.at) return null;
  return new Date(r.at).getTime() - (new Date(r.db_now).getTime() - Date.now());
}
