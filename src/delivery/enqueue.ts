import type { Queryable } from '../db/db.ts';

/** A capture just inserted, as the delivery engine needs it. */
export interface NewCapture {
  id: string;
  organizationId: string;
  endpointId: string;
  receivedAt: Date;
}

/**
 * Called by the ingest batcher inside the same transaction that inserts the
 * captures, so a capture and its deliveries commit together (DESIGN.md,
 * "Durable ack"). Inserts one delivery row per enabled destination of each
 * capture's endpoint (and its forward_url) and NOTIFYs the workers.
 *
 * The forwarding engine (issue 4) fills this in.
 */
export async function enqueueDeliveries(_tx: Queryable, _captures: readonly NewCapture[]): Promise<void> {}
