import type { Db, Queryable } from '../db/db.ts';
import { newId } from '../db/ids.ts';
import { forwardTargets, insertDeliveries, wakeWorkers, type NewDelivery } from './enqueue.ts';
import type { DestinationType } from './transport.ts';

export interface CaptureRef {
  id: string;
  endpointId: string;
  receivedAt: Date;
}

/** A captured request of the organization, or undefined (another organization's id included). */
export async function findCapture(db: Queryable, organizationId: string, requestId: string): Promise<CaptureRef | undefined> {
  const { rows } = await db.query<{ id: string; endpoint_id: string; received_at: Date }>(
    `select id, endpoint_id, received_at from captured_requests where id = $1::uuid and organization_id = $2::uuid`,
    [requestId, organizationId],
  );
  const r = rows[0];
  return r ? { id: r.id, endpointId: r.endpoint_id, receivedAt: new Date(r.received_at) } : undefined;
}

export interface QueuedReplay {
  id: string;
  destinationId: string | null;
  destinationType: DestinationType;
  url: string | null;
}

export type ReplayResult =
  | { ok: true; replayBatchId: string; requestId: string; deliveries: QueuedReplay[] }
  | { ok: false; reason: 'request_not_found' | 'destination_not_found' | 'destination_disabled' | 'no_destinations' };

/**
 * Forwards one captured request again: to every enabled destination of its
 * endpoint as they are now (forward_url included), or to one named forward
 * destination of that endpoint. Replays are ordinary deliveries (same
 * retries, pacing and webhook-id) tagged with one replay_batch_id.
 */
export async function replayRequest(
  db: Db,
  input: { organizationId: string; requestId: string; destinationId?: string; ignoreFilter?: boolean },
): Promise<ReplayResult> {
  return db.transaction(async (tx) => {
    const capture = await findCapture(tx, input.organizationId, input.requestId);
    if (!capture) return { ok: false, reason: 'request_not_found' } as const;
    let targets = await forwardTargets(tx, [capture.endpointId], { includeDisabled: input.destinationId !== undefined });
    if (input.destinationId !== undefined) {
      targets = targets.filter((t) => t.forwardDestinationId === input.destinationId);
      if (targets.length === 0) return { ok: false, reason: 'destination_not_found' } as const;
      if (!targets[0].enabled) return { ok: false, reason: 'destination_disabled' } as const;
    }
    if (targets.length === 0) return { ok: false, reason: 'no_destinations' } as const;
    const replayBatchId = newId();
    const rows: NewDelivery[] = targets.map((target) => ({
      id: newId(),
      organizationId: input.organizationId,
      requestId: capture.id,
      requestReceivedAt: capture.receivedAt,
      target,
      replayBatchId,
      ignoreFilter: input.ignoreFilter ?? false,
    }));
    await insertDeliveries(tx, rows);
    await wakeWorkers(tx);
    return {
      ok: true,
      replayBatchId,
      requestId: capture.id,
      deliveries: rows.map((r) => ({ id: r.id, destinationId: r.target.forwardDestinationId, destinationType: r.target.destinationType, url: r.target.url })),
    } as const;
  });
}
