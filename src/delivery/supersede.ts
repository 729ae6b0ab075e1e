import type { Queryable } from '../db/db.ts';

/**
 * Issue 28, item 2: a replay that delivers a request to a destination makes
 * that pair's waiting deliveries unnecessary. Without this, a retry queued
 * before the replay fires later and the receiver gets the event twice.
 * Such a delivery ends `superseded`, without being sent.
 *
 * "The same pair": the same captured request to the same forward
 * destination, or to the same forward_url of the same endpoint. Only
 * deliveries queued before the successful replay (older ids: the original
 * delivery's retries, an earlier replay) are superseded; one queued after
 * it was asked for afterwards and still runs. A delivery in flight at that
 * moment cannot be stopped and finishes.
 */

// Where it happens: the CTE `superseded` of the completion statement
// COMPLETE_ATTEMPTS_RECORDING_INCIDENTS (complete-statement.ts), after
// `moved`: the replays that just succeeded supersede their pair's older
// waiting deliveries in the same transaction, so no worker can claim one
// after the replay's success commits. Replays always run that statement
// (outcomeConcernsIncidents).

/**
 * Ends the given deliveries `superseded` if they are still waiting (an
 * incident replay taking the place of a delivery that is still retrying).
 * Returns the ids that were waiting; one in flight is left to finish.
 */
export async function supersedeWaiting(tx: Queryable, deliveryIds: readonly string[], reason: string): Promise<string[]> {
  if (deliveryIds.length === 0) return [];
  const { rows } = await tx.query<{ id: string }>(
    `update deliveries set status = 'superseded', paced_slot = null, last_error = $2, updated_at = now()
      where id = any($1::uuid[]) and status = 'pending'
      returning id`,
    [deliveryIds, `superseded: ${reason}`],
  );
  return rows.map((r) => r.id);
}
