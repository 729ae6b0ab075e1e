import type { Queryable } from '../db/db.ts';

/**
 * Issue 28, item 5: where a captured request's forwarding stands, at a
 * glance, for the captures list and one capture (docs/capture.md).
 *
 * A capture's deliveries are grouped by pair (destination: a forward
 * destination, or the forward_url / agent it was queued to); each pair is
 * - delivered: one of its deliveries succeeded (or was superseded by a replay that did, or its transformation skipped it on purpose);
 * - retrying: none succeeded and one is waiting for a retry or being retried;
 * - pending: none succeeded or was tried yet, one is waiting for its first attempt;
 * - failed: all of its deliveries ended without success (failed, dead);
 * - filtered: every one of its deliveries was filtered out (docs/routing.md):
 *   counted in `destinations` but in none of the other counts.
 * The capture is `failed` when any pair failed, else `retrying` when any
 * retries, else `pending` when any waits, else `filtered` when every pair
 * was filtered, else `delivered`; with no
 * delivery at all it is `no_destinations`. That is the one place the rule
 * lives: the page summaries and the `delivery_status` list filter both use
 * this SQL.
 */
export const CAPTURE_DELIVERY_STATES = ['delivered', 'retrying', 'pending', 'failed', 'no_destinations', 'filtered'] as const;
export type CaptureDeliveryState = (typeof CAPTURE_DELIVERY_STATES)[number];

const PAIR_STATE = `case when bool_or(d.status in ('succeeded', 'superseded', 'skipped')) then 'delivered'
            when bool_or(d.status in ('pending', 'in_flight') and d.attempt_count > 0) then 'retrying'
            when bool_or(d.status in ('pending', 'in_flight')) then 'pending'
            when bool_and(d.status = 'filtered') then 'filtered'
            else 'failed' end`;

const PAIR = 'd.forward_destination_id, d.url, d.agent_id';

const CAPTURE_STATE = `case when count(*) = 0 then 'no_destinations'
            when bool_or(p.s = 'failed') then 'failed'
            when bool_or(p.s = 'retrying') then 'retrying'
            when bool_or(p.s = 'pending') then 'pending'
            when bool_and(p.s = 'filtered') then 'filtered'
            else 'delivered' end`;

/**
 * The capture's state as an SQL expression, for a capture row whose id and
 * organization are the given column expressions: a probe of the
 * deliveries_request index per capture (what the list filter pays per
 * capture it walks past).
 */
export function captureDeliveryStateSql(requestId: string, organizationId: string): string {
  return `(select ${CAPTURE_STATE}
             from (select ${PAIR_STATE} as s from deliveries d
                    where d.request_id = ${requestId} and d.organization_id = ${organizationId}
                    group by ${PAIR}) p)`;
}

/**
 * The summary's columns for one capture as a LATERAL subquery (always one
 * row: no delivery counts as no_destinations), so the captures page reads
 * the page and its summaries in ONE statement: one round trip and one plan
 * instead of two. Columns: delivery_status, delivery_destinations,
 * delivery_delivered, delivery_retrying, delivery_pending, delivery_failed
 * (summaryOfRow turns them into a DeliverySummary).
 */
export function deliverySummaryLateralSql(requestId: string, organizationId: string): string {
  return `(select ${CAPTURE_STATE} as delivery_status, count(*)::int as delivery_destinations,
            count(*) filter (where p.s = 'delivered')::int as delivery_delivered, count(*) filter (where p.s = 'retrying')::int as delivery_retrying,
            count(*) filter (where p.s = 'pending')::int as delivery_pending, count(*) filter (where p.s = 'failed')::int as delivery_failed
       from (select ${PAIR_STATE} as s from deliveries d
              where d.request_id = ${requestId} and d.organization_id = ${organizationId}
              group by ${PAIR}) p)`;
}

export interface SummaryColumns {
  delivery_status: CaptureDeliveryState;
  delivery_destinations: number;
  delivery_delivered: number;
  delivery_retrying: number;
  delivery_pending: number;
  delivery_failed: number;
}

export function summaryOfRow(r: SummaryColumns): DeliverySummary {
  return {
    status: r.delivery_status,
    destinations: r.delivery_destinations,
    delivered: r.delivery_delivered,
    retrying: r.delivery_retrying,
    pending: r.delivery_pending,
    failed: r.delivery_failed,
  };
}

export interface DeliverySummary {
  status: CaptureDeliveryState;
  /** Destinations the capture was forwarded (or queued) to, and how many of them are in each state. */
  destinations: number;
  delivered: number;
  retrying: number;
  pending: number;
  failed: number;
}

const NONE: DeliverySummary = { status: 'no_destinations', destinations: 0, delivered: 0, retrying: 0, pending: 0, failed: 0 };

/**
 * The summaries of some captures of one organization in one query (one
 * index probe per capture: a page of 100 costs 100 probes, whatever the
 * page's depth). A capture without deliveries gets `no_destinations`.
 */
export async function deliverySummaries(db: Queryable, organizationId: string, requestIds: readonly string[]): Promise<Map<string, DeliverySummary>> {
  const out = new Map<string, DeliverySummary>();
  if (requestIds.length === 0) return out;
  const { rows } = await db.query<{ request_id: string; status: CaptureDeliveryState; destinations: number; delivered: number; retrying: number; pending: number; failed: number }>(
    `select p.request_id, ${CAPTURE_STATE} as status, count(*)::int as destinations,
            count(*) filter (where p.s = 'delivered')::int as delivered, count(*) filter (where p.s = 'retrying')::int as retrying,
            count(*) filter (where p.s = 'pending')::int as pending, count(*) filter (where p.s = 'failed')::int as failed
       from (select d.request_id, ${PAIR_STATE} as s from deliveries d
              where d.request_id = any($1::uuid[]) and d.organization_id = $2::uuid
              group by d.request_id, ${PAIR}) p
      group by p.request_id`,
    [requestIds, organizationId],
  );
  for (const { request_id, ...summary } of rows) out.set(request_id, summary);
  for (const id of requestIds) if (!out.has(id)) out.set(id, { ...NONE });
  return out;
}
