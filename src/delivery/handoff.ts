/**
 * Hand-off: a fresh capture's HTTPS deliveries leased by the capture
 * statement itself to this node's worker, which sends them without a claim
 * (docs/forwarding.md, "Hand-off"). A quiet forward skips the claim's round
 * trip and the NOTIFY that woke the worker for it: on both databases they
 * were 1.4 ms of a quiet forward's 5 ms.
 *
 * The capture statement (src/ingest/store.ts, HANDOFF) leases a delivery
 * only while the rules of a claim would send it at once: an HTTPS
 * destination without a rate limit, no HTTPS delivery due and waiting (a
 * claim would take that one first), and room in the worker (`room()`, read
 * before the statement). Everything else is inserted `pending`, as before,
 * and claimed. A handed delivery is `in_flight` under a lease of this node
 * from the commit on: if the node dies before its outcome is recorded, the
 * lease expires (or, on PGlite, the next start releases it) and any node
 * sends it again, as for a claimed one.
 */
import type { Capture } from '../requests/captures.ts';
import type { ClaimedDelivery } from './transport.ts';
import { destinationRetry } from './retry-policy.ts';

/** This node's HTTPS worker, as the capture statement sees it. */
export interface Handoff {
  /** How many fresh deliveries the worker takes now: 0 without free send slots, with a backlog, or stopped. */
  room(): number;
  /** The lease a handed delivery gets (the worker's leaseMs). */
  readonly leaseMs: number;
  /** deliveries.leased_by of a handed delivery: the worker's node. */
  readonly node: string;
  /** Takes the deliveries a committed capture statement leased to `node`. */
  adopt(deliveries: ClaimedDelivery[]): void;
}

/**
 * A handed delivery as the capture statement returns it (`handed`, one JSON
 * array a delivery): id, lease id, capture id, forward destination id, url,
 * and what the claim reads of the destination.
 */
export type HandedRow = [
  id: string,
  leaseId: string,
  requestId: string,
  forwardDestinationId: string | null,
  url: string,
  methodOverride: string | null,
  retryEnabled: boolean | null,
  retrySchedule: number[] | null,
  intelligentRetry: boolean | null,
  filterVersion: string | null,
  transformation: { code: string } | null,
];

/** The parts of a capture a handed delivery carries: the request as stored, which the statement did not read back. */
export type HandedCapture = Pick<Capture, 'id' | 'organization_id' | 'endpoint_id' | 'received_at' | 'method' | 'path' | 'query' | 'headers' | 'body' | 'verification_status'>;

/** The ClaimedDelivery a claim would have made of a handed delivery (claim.ts claimIn), from the statement's row and its capture. */
export function handedDelivery(row: HandedRow, c: HandedCapture): ClaimedDelivery {
  const [id, leaseId, requestId, forwardDestinationId, url, methodOverride, retryEnabled, retrySchedule, intelligentRetry, filterVersion, transformation] = row;
  return {
    id,
    leaseId,
    organizationId: c.organization_id,
    requestId,
    endpointId: c.endpoint_id,
    forwardDestinationId,
    destinationType: 'https',
    url,
    agentId: null,
    replayBatchId: null,
    attemptNumber: 1,
    sendAt: 0,
    capture: { id: c.id, method: c.method, path: c.path, query: c.query, headers: c.headers, body: c.body, verification: c.verification_status ?? null },
    // only enabled destinations get a delivery (the capture statement's targets)
    enabled: true,
    methodOverride,
    targetPort: null,
    targetPath: null,
    agentEnvironment: null,
    filterVersion,
    transformation,
    requestReceivedAt: c.received_at,
    retry: destinationRetry(forwardDestinationId, retryEnabled, retrySchedule, intelligentRetry),
  };
}
