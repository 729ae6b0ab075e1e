import type { Queryable } from '../db/db.ts';
import { emitEvents } from '../subscriptions/emit.ts';
import { FAILURE_COLUMNS, presentFailure, type FailureRow } from './incidents.ts';

/**
 * request.forward_failed is announced once per failure episode. An episode
 * is one delivery of a request to a destination, from when it is queued
 * (with the capture, or by an incident replay) until it ends: its retries
 * are part of it, so it is announced once, at its first failed attempt, not
 * once per attempt. The first episode is the capture's own delivery (below);
 * each incident replay that fails again is a new one (announceReplayFailures).
 */

/**
 * request.forward_failed: a delivery's first failed attempt (its `status`
 * says `retrying`, with `next_attempt_at`, when a retry is left), announced
 * when the correlator assigns it to its incident (within a second of the failure,
 * in the correlator's transaction: once per failure, never lost). The
 * forward path itself does nothing more than before.
 */
export async function announceForwardFailures(tx: Queryable, failureIds: readonly string[]): Promise<number> {
  if (failureIds.length === 0) return 0;
  const { rows } = await tx.query<FailureRow & { incident_id: string; delivery_id: string; destination_type: string }>(
    `select ${FAILURE_COLUMNS}, incident_id, delivery_id, destination_type
       from incident_failures where id = any($1::uuid[]) order by id`,
    [failureIds],
  );
  return announce(tx, rows.map((f) => ({ failure: f, deliveryId: f.delivery_id, sourceId: f.id })));
}

/**
 * The episodes an incident replay batch ended in failure: each of its
 * deliveries that ended failed or dead, announced (as the failure it
 * replayed, with its replay's outcome and the replay delivery's id) when
 * the batch finishes or pauses, in the transaction that changes the
 * batch's state. The event's source is the replay delivery, so a batch
 * that pauses and later finishes announces each failed delivery once, and
 * a later replay of the same request is a new episode with a new event.
 */
export async function announceReplayFailures(tx: Queryable, batchId: string): Promise<number> {
  const { rows } = await tx.query<FailureRow & { incident_id: string; replay_delivery_id: string; destination_type: string }>(
    `select f.id, f.organization_id, f.incident_id, f.replay_delivery_id, f.request_id, f.endpoint_id, f.forward_destination_id, f.destination_type,
            f.destination_url, f.status_code, f.error_class, f.error, f.failed_at, f.recovered_at, f.next_attempt_at, f.replayed_at, f.replay_status_code
       from deliveries d join incident_failures f on f.replay_delivery_id = d.id
      where d.replay_batch_id = $1::uuid and d.status in ('failed', 'dead')
      order by d.id`,
    [batchId],
  );
  return announce(tx, rows.map((f) => ({ failure: f, deliveryId: f.replay_delivery_id, sourceId: f.replay_delivery_id })));
}

type AnnouncedFailure = FailureRow & { incident_id: string; destination_type: string };

/** One request.forward_failed per episode: the failure as the API shows it, with the delivery it is about; `sourceId` makes it once only. */
function announce(tx: Queryable, episodes: Array<{ failure: AnnouncedFailure; deliveryId: string; sourceId: string }>): Promise<number> {
  return emitEvents(
    tx,
    'request.forward_failed',
    episodes.map(({ failure: f, deliveryId, sourceId }) => ({
      organizationId: f.organization_id,
      type: 'request.forward_failed',
      endpointId: f.endpoint_id,
      sourceId,
      data: () => ({ object: { ...presentFailure(f), delivery_id: deliveryId, destination_type: f.destination_type, incident_id: f.incident_id } }),
    })),
  );
}
