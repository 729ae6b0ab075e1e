import type { CapturedMessage } from './forward-request.ts';
import type { AttemptOutcome, RetrySettings } from './retry-policy.ts';

export type DestinationType = 'https' | 'agent';

/** A delivery a worker holds the lease of, with everything needed to attempt it. */
export interface ClaimedDelivery {
  id: string;
  /** Proves the lease when the outcome is recorded. */
  leaseId: string;
  organizationId: string;
  requestId: string;
  endpointId: string;
  /** null: the endpoint's forward_url. */
  forwardDestinationId: string | null;
  destinationType: DestinationType;
  url: string | null;
  agentId: string | null;
  /** Set when a replay queued it (one id per replay call); null for a capture's own delivery. */
  replayBatchId: string | null;
  /** 1 for the first try. */
  attemptNumber: number;
  /** Local epoch ms before which a paced delivery must not be sent (its slot); 0 when unpaced. */
  sendAt: number;
  /** The paced slot the claim gave, epoch ms in the database's clock (the attempt's scheduled_at); null or absent when unpaced. */
  pacedSlotMs?: number | null;
  /** null when the capture no longer exists (retention removed it). */
  capture: CapturedMessage | null;
  /** A destination disabled after the delivery was queued is skipped. */
  enabled: boolean;
  methodOverride: string | null;
  /** Agent deliveries: the loopback port and path on the agent's machine, as the destination says now. */
  targetPort?: number | null;
  targetPath?: string | null;
  /** Agent deliveries: the agent's environment, downgraded by the destination's environment_override. */
  agentEnvironment?: 'production' | 'development' | null;
  /** Routing (src/routing/apply.ts): the version of the destination's filter now; null: it has none, or this delivery ignores it. */
  filterVersion?: string | null;
  retry: RetrySettings;
  /** The destination's transformation as it is now (src/transformations); null or absent: none. */
  transformation?: { code: string } | null;
  /** When the capture arrived (a transformation's context.received_at). */
  requestReceivedAt?: Date | null;
}

/** What the HTTPS transport reads of a delivery: the capture, where it goes and with which method. */
export type Sendable = Pick<ClaimedDelivery, 'capture' | 'url' | 'methodOverride'>;

/** What one attempt produced, as recorded in delivery_attempts. */
export interface AttemptResult extends AttemptOutcome {
  startedAt: Date;
  durationMs: number;
  url: string | null;
  responseHeaders?: Array<[string, string]>;
  responseBody?: Buffer;
  responseTruncated?: boolean;
  errorMessage?: string;
  /** sha256 of the transformation code this attempt ran, and the request as sent (src/transformations/run.ts). */
  transformationHash?: string;
  sentRequest?: unknown;
}

/**
 * How deliveries of one destination type reach their target. The worker
 * claims, paces, records and retries; a transport only performs one
 * attempt. The HTTPS transport is src/delivery/http-transport.ts; the agent
 * gateway (a later issue) implements this for `agent` deliveries and runs a
 * worker that claims only the agents connected to its node.
 */
export interface Transport {
  readonly destinationType: DestinationType;
  /** Performs one attempt; resolves with its result (failures included), never rejects. `signal` aborts it at shutdown. */
  send(delivery: ClaimedDelivery, signal: AbortSignal): Promise<AttemptResult>;
  /**
   * Set on a transport that runs at most this many attempts at once and
   * queues the rest itself, first in first out (the HTTPS transport on a
   * thread of its own, src/delivery/thread-transport.ts). A worker of that
   * concurrency hands it every delivery it holds at once (sendQueued), so
   * an answer starts the next attempt where it arrives, without waiting for
   * the worker's thread to read it (docs/forwarding.md).
   */
  readonly queueLimit?: number;
  /**
   * send(), through the transport's own queue: null when the attempt was
   * not started, because `signal` aborted first or it would have started
   * after `startBy` (epoch ms).
   */
  sendQueued?(delivery: ClaimedDelivery, signal: AbortSignal, startBy: number): Promise<AttemptResult | null>;
  close(): Promise<void>;
}
