import type { Queryable } from '../db/db.ts';
import { emitEvents } from '../subscriptions/emit.ts';
import { FAILURE_COLUMNS, presentFailure, type FailureRow } from './incidents.ts';

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
  return emitEvents(
    tx,
    'request.forward_failed',
    rows.map((f) => ({
      organizationId: f.organization_id,
      type: 'request.forward_failed',
      endpointId: f.endpoint_id,
      sourceId: f.id,
      data: () => ({ object: { ...presentFailure(f), delivery_id: f.delivery_id, destination_type: f.destination_type, incident_id: f.incident_id } }),
    })),
  );
}
