import type { Queryable } from '../db/db.ts';
import { idFloor } from '../db/ids.ts';

/**
 * Which deliveries the sweep finds, each by its own index (migration 0023):
 * - a capture's own deliveries, whose ids begin with the capture's id and
 *   so sort by its received time: a range of the primary key below the
 *   cutoff's smallest id ($3);
 * - deliveries with ids of their own (replays, made at replay time):
 *   `deliveries_replayed_received`, whose predicate is repeated here as
 *   written in the migration so the planner can use it.
 * Both keep `request_received_at < $1`, so neither deletes a delivery of
 * a capture received at or after the cutoff.
 */
const OWN_DELIVERIES = 'id < $3::uuid';
const REPLAYED_DELIVERIES = 'substring(uuid_send(id) from 1 for 8) <> substring(uuid_send(request_id) from 1 for 8)';

/**
 * Deletes deliveries (and, by cascade, their attempts) of captures received
 * before `before`: the capture retention has removed those captures (their
 * day partitions are dropped at the longest plan retention), so their
 * deliveries can neither be sent nor shown. In-flight rows are left to
 * their worker. Small batches, each its own statement, so no long lock.
 */
export async function sweepDeliveries(db: Queryable, before: Date, batchSize = 5_000, stopping = () => false): Promise<number> {
  let total = 0;
  for (const { text, params } of sweepStatements(before, batchSize)) {
    for (;;) {
      const { rowCount } = await db.query(text, params);
      total += rowCount;
      if (stopping()) return total;
      if (rowCount < batchSize) break;
    }
  }
  return total;
}

/** The sweep's two statements, each deleting up to `batchSize` (exported for the plan test). */
export function sweepStatements(before: Date, batchSize: number): { text: string; params: unknown[] }[] {
  const parts = [
    { which: OWN_DELIVERIES, extra: [idFloor(before.getTime())] },
    { which: REPLAYED_DELIVERIES, extra: [] },
  ];
  return parts.map(({ which, extra }) => ({
    text: `delete from deliveries
            where id in (select id from deliveries
                          where ${which} and request_received_at < $1::timestamptz and status <> 'in_flight'
                          limit $2 for update skip locked)`,
    params: [before.toISOString(), batchSize, ...extra],
  }));
}
