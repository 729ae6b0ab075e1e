import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { HttpTransport, type HttpTransportOptions } from '../delivery/http-transport.ts';
import { WakeableSleep } from '../delivery/wake-sleep.ts';
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
  let stopped = false;
  const sleeper = new WakeableSleep();
  const unlisten = await db.listen(CAPTURES_CHANNEL, () => sleeper.wake(), () => sleeper.wake());
  const produce = async () => {
    while (!stopped) {
      sleeper.clear();
      try {
        await drainCaptureOutbox(db, { stopping: () => stopped });
      } catch (err) {
        if (!stopped) log.error({ err }, 'producing request.captured events failed; retrying');
      }
      if (stopped) break;
      await sleeper.sleep(Date.now() + (deps.tickMs ?? PRODUCE_TICK_MS));
    }
  };
  const producing = produce();
  // finished events past their organization's retention (docs/subscriptions.md, "Retention")
  let sweeping: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    sweeping = sweepSubscriptionEvents(db, config.plans, Date.now(), () => stopped).then(
      (n) => n > 0 && log.info({ deleted: n }, 'deleted subscription events past retention'),
      (err) => log.warn({ err }, 'subscription event retention sweep failed; retrying next hour'),
    );
  };
  const sweepTimer = setInterval(sweep, EVENT_SWEEP_EVERY_MS);
  sweepTimer.unref();
  return {
    worker,
    async stop() {
      stopped = true;
      clearInterval(sweepTimer);
      sleeper.wake();
      await unlisten().catch(() => {});
      await Promise.all([producing, sweeping]);
      await worker.stop();
    },
  };
}
