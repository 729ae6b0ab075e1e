import type { Logger } from 'pino';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { HttpTransport, type HttpTransportOptions } from '../delivery/http-transport.ts';
import { drainCaptureOutbox } from './capture-events.ts';
import { CAPTURES_CHANNEL } from './emit.ts';
import { EventWorker } from './event-worker.ts';
import { requeueExpiredEvents } from './queue.ts';
import { EVENT_SWEEP_EVERY_MS, sweepSubscriptionEvents } from './retention.ts';

/**
 * How often a node looks at the request.captured outbox without being told
 * to: a notification lost while the listen connection was down is made up
 * for within this. Normally the capture statement's NOTIFY wakes it at once.
 */
export const PRODUCE_TICK_MS = 1_000;
/** Event sends in flight at once on one node. */
const EVENT_CONCURRENCY = 16;

export interface SubscriptionDeps {
  db: Db;
  config: Config;
  logger: Logger;
  tickMs?: number;
  loopMetrics?: LoopMetrics;
}

/**
 * This node's share of subscription work: the event worker (signed sends
 * through the forwards' HTTPS transport and its SSRF guard) and the
 * request.captured producer (woken by the capture statement's NOTIFY, and
 * every PRODUCE_TICK_MS). `transport` lets in-process tests trust
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
    firstAfterMs: 0,
    metrics: deps.loopMetrics,
    onError: (err) => log.error({ err }, 'producing request.captured events failed; retrying'),
    pass: (signal) => drainCaptureOutbox(db, { stopping: () => signal.aborted }),
  });
  // the capture statement's NOTIFY runs a pass at once (one more after a pass in progress, however many arrive)
  const wake = () => void producer.runOnce();
  const unlisten = await db.listen(CAPTURES_CHANNEL, wake, wake);
  producer.start();
  // finished events past their organization's retention (docs/subscriptions.md, "Retention")
  const sweeper = createLoop({
    name: 'subscription_event_retention',
    everyMs: EVENT_SWEEP_EVERY_MS,
    metrics: deps.loopMetrics,
    onError: (err) => log.warn({ err }, 'subscription event retention sweep failed; retrying next hour'),
    pass: async (signal) => {
      const n = await sweepSubscriptionEvents(db, config.plans, Date.now(), () => signal.aborted);
      if (n > 0) log.info({ deleted: n }, 'deleted subscription events past retention');
    },
  });
  sweeper.start();
  return {
    worker,
    async stop() {
      await unlisten().catch(() => {});
      await Promise.all([producer.stop(), sweeper.stop()]);
      await worker.stop();
    },
  };
}
