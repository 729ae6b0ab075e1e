import type { Queryable } from '../db/db.ts';
import { PLAN_NAMES, type PlanTable } from '../orgs/plans.ts';
import { DAY_MS } from '../requests/partitions.ts';

/** How often a node sweeps finished events (each sweep is small batches, SKIP LOCKED: nodes never wait on each other). */
export const EVENT_SWEEP_EVERY_MS = 60 * 60_000;
const BATCH = 5_000;

/**
 * Deletes finished subscription events (succeeded, failed, dead) created
 * longer ago than their organization's plan retention, the same number of
 * days its captures are kept, so a request.captured payload, which carries
 * a capture, is not kept longer than the capture. Only finished rows
 * match: a pending or in-flight event is never deleted, whatever its age
 * (a retry schedule ends within about 27 hours, so it finishes first).
 * Small batches, each its own statement: no long lock. Returns how many.
 */
export async function sweepSubscriptionEvents(db: Queryable, plans: PlanTable, now = Date.now(), stopping = () => false): Promise<number> {
  let total = 0;
  for (const plan of PLAN_NAMES) {
    const before = new Date(now - plans[plan].retention_days * DAY_MS).toISOString();
    for (;;) {
      const { rowCount } = await db.query(
        `delete from subscription_events
          where id in (select e.id from subscription_events e join organizations o on o.id = e.organization_id
                        where o.plan = $1 and e.status in ('succeeded', 'failed', 'dead') and e.created_at < $2::timestamptz
                        limit $3 for update of e skip locked)`,
        [plan, before, BATCH],
      );
      total += rowCount;
      if (rowCount < BATCH || stopping()) break;
    }
    if (stopping()) break;
  }
  return total;
}
