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

/**
 * A CTE for the completion statement (src/delivery/complete.ts), after
 * `moved`: the replays that just succeeded supersede their pair's older
 * waiting deliveries in the same transaction, so no worker can claim one
 * after the replay's success commits. Replays always run the statement's
 * incidents variant (outcomeConcernsIncidents), where this is appended.
 */
export const SUPERSEDE_WAITING_AFTER_REPLAY = `
     superseded as (
       update deliveries w
          set status = 'superseded', paced_slot = null, updated_at = now(),
              last_error = 'superseded: replay delivery ' || m.id::text || ' delivered this request to this destination'
         from moved m
        where m.status = 'succeeded' and m.replay_batch_id is not null
          and w.request_id = m.request_id and w.organization_id = m.organization_id and w.id < m.id and w.status = 'pending'
          and (w.forward_destination_id = m.forward_destination_id
               or (m.forward_destination_id is null and w.forward_destination_id is null and w.endpoint_id = m.endpoint_id and w.url = m.url))
     )`;

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
