import type { Queryable } from '../db/db.ts';

/**
 * Deletes deliveries (and, by cascade, their attempts) of captures received
 * before `before`: the capture retention has removed those captures (their
 * day partitions are dropped at the longest plan retention), so their
 * deliveries can neither be sent nor shown. In-flight rows are left to
 * their worker. Small batches, each its own statement, so no long lock.
 */
export async function sweepDeliveries(db: Queryable, before: Date, batchSize = 5_000, stopping = () => false): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `delete from deliveries
        where id in (select id from deliveries
                      where request_received_at < $1::timestamptz and status <> 'in_flight'
                      limit $2 for update skip locked)`,
      [before.toISOString(), batchSize],
    );
    total += rowCount;
    if (rowCount < batchSize || stopping()) return total;
  }
}
