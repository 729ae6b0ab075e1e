import type { Logger } from 'pino';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { HttpTransport, type HttpTransportOptions } from '../delivery/http-transport.ts';
import { produceCaptureEvents } from './capture-events.ts';
import { EventWorker } from './event-worker.ts';
import { requeueExpiredEvents } from './queue.ts';

/** How often a node looks for new captures to announce: request.captured arrives within about SETTLE_MS plus this. */
export const PRODUCE_TICK_MS = 1_000;
/** Event sends in flight at once on one node. */
const EVENT_CONCURRENCY = 16;

export interface SubscriptionDeps {
  db: Db;
  config: Config;
  logger: Logger;
  tickMs?: number;
  settleMs?: number;
  loopMetrics?: LoopMetrics;
}

/**
 * This node's share of subscription work: the event worker (signed sends
 * through the forwards' HTTPS transport and its SSRF guard) and the
 * request.captured producer tick. `transport` lets in-process tests trust
 * their test CA.
 */
export async function startSubscriptions(deps: SubscriptionDeps, transport: Partial<HttpTransportOptions> = {}): Promise<{ worker: EventWorker; stop(): Promise<void> }> {
  const { db, config } = deps;
  const log = deps.logger.child({ component: 'subscriptions' });
  if (db.kind === 'pglite') {
    // as for forwards: behind the data-directory lock, a leased event was held by a process that died
    const n = await requeueExpiredEvents(db, { everyLease: true });
    if (n > 0) log.warn({ count: n }, 'sending again the events a previous process died holding');
  }
  const worker = new EventWorker({
    db,
    logger: log,
    transport: new HttpTransport({
      allowPrivate: config.allowPrivateDestinations,
      connectTimeoutMs: config.forwardConnectTimeoutMs,
      timeoutMs: config.forwardTimeoutMs,
      ...transport,
    }),
    concurrency: EVENT_CONCURRENCY,
    leaseMs: config.deliveryLeaseMs,
    pollMs: config.deliveryPollMs,
  });
  await worker.start();
  const producer = createLoop({
    name: 'capture_events',
    everyMs: deps.tickMs ?? PRODUCE_TICK_MS,
    metrics: deps.loopMetrics,
    onError: (err) => log.error({ err }, 'producing request.captured events failed; retrying'),
    pass: () => produceCaptureEvents(db, { settleMs: deps.settleMs }),
  });
  producer.start();
  return {
    worker,
    async stop() {
      await producer.stop();
      await worker.stop();
    },
  };
}
