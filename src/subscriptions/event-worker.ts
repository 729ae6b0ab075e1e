import type { Logger } from 'pino';
import type { Db } from '../db/db.ts';
import { decide, DEFAULT_RETRY } from '../delivery/retry-policy.ts';
import type { ClaimedDelivery, Transport } from '../delivery/transport.ts';
import { QueueLoop } from '../delivery/queue-loop.ts';
import { EVENTS_CHANNEL } from './emit.ts';
import { claimEvents, completeEvent, nextEventDueAt, releaseEventLeases, requeueExpiredEvents, type ClaimedEvent } from './queue.ts';
import { signedHeaders } from './signing.ts';

export interface EventWorkerOptions {
  db: Db;
  /** The forwards' HTTPS transport: the same SSRF guard, timeouts and TLS checks. */
  transport: Transport;
  logger: Logger;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  /** Called after each recorded outcome (tests observe through it). */
  onSettled?: (event: ClaimedEvent, status: string) => void;
}

/**
 * The request an event delivery is, in the shape the HTTPS transport sends:
 * a POST of the stored payload with fresh Standard Webhooks headers. The
 * transport adds x-weir-request-id, which here carries the event's id.
 */
export function eventRequest(e: ClaimedEvent, now = Date.now()): ClaimedDelivery {
  return {
    id: e.id,
    leaseId: e.leaseId,
    organizationId: e.organizationId,
    requestId: e.id,
    endpointId: '',
    forwardDestinationId: null,
    destinationType: 'https',
    url: e.targetUrl,
    agentId: null,
    replayBatchId: null,
    attemptNumber: e.attemptNumber,
    sendAt: 0,
    capture: { id: e.id, method: 'POST', path: '', query: '', headers: signedHeaders(e.secrets, `evt_${e.id}`, e.payload, now), body: Buffer.from(e.payload) },
    enabled: true,
    methodOverride: null,
    retry: DEFAULT_RETRY,
  };
}

/**
 * One node's loop over the event queue: claim, sign, send, record. The
 * forwards' loop (src/delivery/queue-loop.ts) with a simpler pass: events
 * are never paced and never go to agents.
 */
export class EventWorker extends QueueLoop<{ event: ClaimedEvent; abort: AbortController; done: Promise<void> }> {
  constructor(private readonly o: EventWorkerOptions) {
    super({
      db: o.db,
      logger: o.logger,
      pollMs: o.pollMs,
      channel: EVENTS_CHANNEL,
      messages: { requeued: 'requeued events whose lease expired', passFailed: 'event claim failed; retrying' },
    });
  }

  protected recoverLeases(): Promise<number> {
    return requeueExpiredEvents(this.o.db);
  }

  protected async pass(until: number): Promise<number> {
    const free = this.o.concurrency - this.inflight.size;
    if (free > 0) {
      for (const e of await claimEvents(this.o.db, { limit: free, leaseMs: this.o.leaseMs })) this.launch(e);
    }
    // every slot taken: a finished send wakes the loop, so waiting on the due time would only spin
    if (this.inflight.size >= this.o.concurrency) return until;
    const due = await nextEventDueAt(this.o.db);
    return due === null ? until : Math.min(until, Math.max(due, Date.now()));
  }

  private launch(e: ClaimedEvent): void {
    const abort = new AbortController();
    const done = this.process(e, abort.signal)
      .catch((err) => this.o.logger.error({ err, event: e.id }, 'recording an event outcome failed; its lease will expire and it will be retried'))
      .finally(() => {
        this.inflight.delete(e.id);
        // the subscription's next event may go now
        this.wake();
      });
    this.inflight.set(e.id, { event: e, abort, done });
  }

  private async process(e: ClaimedEvent, signal: AbortSignal): Promise<void> {
    const result = await this.o.transport.send(eventRequest(e), signal);
    if (signal.aborted) return;
    const decision = decide(result, DEFAULT_RETRY, e.attemptNumber);
    const owned = await completeEvent(this.o.db, e, {
      statusCode: result.statusCode ?? null,
      error: result.errorMessage ?? result.errorClass ?? null,
      decision,
      gone: result.statusCode === 410,
    });
    if (!owned) this.o.logger.warn({ event: e.id }, 'lease lost before the outcome was recorded; another worker retries it');
    this.o.onSettled?.(e, result.statusCode === 410 ? 'unsubscribed' : decision.status);
  }

  /** Stops claiming; sends in flight get `graceMs`, the rest give their leases back. */
  async stop(graceMs = 10_000): Promise<void> {
    const stopped = await this.stopLoop(graceMs, (left) => releaseEventLeases(this.o.db, left.map((f) => f.event.leaseId)).catch(() => {}));
    if (stopped) await this.o.transport.close();
  }
}
