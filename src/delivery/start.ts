import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { createLoop, type LoopMetrics } from '../background/scheduler.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { DeliveryMetrics } from '../metrics/metrics.ts';
import { longestRetentionDays } from '../requests/retention.ts';
import { HttpTransport, type HttpTransportOptions } from './http-transport.ts';
import { ThreadedHttpTransport } from './thread-transport.ts';
import type { Transport } from './transport.ts';
import { sweepDeliveries } from './retention.ts';
import { DeliveryWorker } from './worker.ts';
import { limitsOf } from '../transformations/sandbox.ts';

const SWEEP_EVERY_MS = 60 * 60_000;
const DAY_MS = 24 * 60 * 60_000;

export interface DeliveryDeps {
  db: Db;
  config: Config;
  logger: Logger;
  metrics?: DeliveryMetrics;
  loopMetrics?: LoopMetrics;
}

export interface RunningDelivery {
  worker: DeliveryWorker;
  /** Stops claiming; in-flight forwards get `graceMs` to finish, the rest give their leases back. */
  stop(graceMs?: number): Promise<void>;
}

/** A name for this node in deliveries.leased_by: host, pid and a random tag (pids repeat across restarts). */
export function nodeName(): string {
  return `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
}

/** How long before its lease could end a held delivery's attempt must begin. */
const LEASE_MARGIN_MS = 2_000;
/** Below this much room for waiting, claim-ahead would mostly give leases back: not worth it. */
const MIN_CLAIM_AHEAD_WAIT_MS = 5_000;

/** Outcomes waiting for their completion statement on PostgreSQL without claim-ahead, in concurrencies (deliveryQueueFor). */
const POSTGRES_UNRECORDED_CONCURRENCIES = 4;
/** Rows a claim takes with claim-ahead, in concurrencies (deliveryQueueFor). */
const CLAIM_CONCURRENCIES = 2;
/** Batches a node holds beyond its send slots with claim-ahead, by database (deliveryQueueFor). */
const CLAIM_AHEAD_BATCHES = { pglite: 2, postgres: 1 } as const;

/**
 * How much the HTTPS delivery worker holds (WorkerOptions.claimAhead,
 * batchSize and unrecordedLimit; figures in docs/forwarding.md,
 * "Claim-ahead").
 *
 * Claim-ahead on both databases: claiming while the send slots are busy,
 * in full batches, took 0.8x the CPU a forward on PGlite, where one thread
 * runs the database and the forwards. On PostgreSQL it paid only once
 * answered forwards could wait for their record beyond twice the
 * concurrency: a completion commits in 3-4 ms there, and while it did, a
 * limit of twice the concurrency kept the next claim back (together 1.2x
 * the forwards a second).
 *
 * With claim-ahead a claim takes two concurrencies of rows: a statement's
 * cost per row falls the more rows it carries (a claim of 64 cost 174 µs
 * a forward on PGlite, of 16 248 µs), and answered outcomes may wait for
 * their record up to one more batch, so the claims and the completions
 * both come in batches of two concurrencies. PGlite: 1.08-1.15x the
 * forwards a second at 0.88x the CPU a forward (2026-11-29). PostgreSQL:
 * 0.98x then, when a row cost more; since the binary arrays, 1.00-1.10x at
 * 0.85-0.95x the CPU a forward, the server's own 0.85x (2026-12-05:
 * docs/forwarding.md).
 *
 * A PGlite node holds two batches beyond its send slots (five
 * concurrencies in all), a PostgreSQL node one (three). With one, the next
 * claim leaves once a batch less half a concurrency has finished, and its
 * rows often come back after the slots have run dry: on PostgreSQL every
 * slot was busy only half the time. With two on PGlite, where the database
 * shares the main thread with the worker, 1.13x the forwards a second at
 * the same CPU a forward; on PostgreSQL the slots were busy more of the
 * time (0.76-0.89 against 0.49-0.57), but the forwards a second did not
 * follow (0.94x) and the CPU a forward in this process rose 1.16x: a
 * delivery held longer survives more young-generation collections
 * (2026-12-07, third session: docs/forwarding.md). A PGlite node is the
 * only node on its database; a PostgreSQL node takes no more than one
 * batch beyond what it is sending, so other nodes still find work.
 *
 * What is claimed ahead of a send slot also stays within `holdBytes` of
 * captured bodies (WEIR_DELIVERY_HOLD_MB), so a backlog of large bodies
 * is held a few at a time instead of a batch of up to 10 MiB each.
 */
export function deliveryQueueFor(
  db: Pick<Db, 'kind'>,
  o: { leaseMs: number; forwardTimeoutMs: number; concurrency: number; holdBytes: number },
): { claimAhead?: { maxWaitMs: number; holdBytes: number; batches: number }; batchSize?: number; unrecordedLimit: number } {
  const maxWaitMs = o.leaseMs - o.forwardTimeoutMs - LEASE_MARGIN_MS;
  const batchSize = CLAIM_CONCURRENCIES * o.concurrency;
  if (maxWaitMs < MIN_CLAIM_AHEAD_WAIT_MS) {
    return db.kind === 'postgres'
      ? { claimAhead: undefined, unrecordedLimit: (1 + POSTGRES_UNRECORDED_CONCURRENCIES) * o.concurrency }
      : { unrecordedLimit: 2 * o.concurrency };
  }
  const batches = CLAIM_AHEAD_BATCHES[db.kind];
  const claimAhead = { maxWaitMs, holdBytes: o.holdBytes, batches };
  // what is held (the send slots and the batches ahead of them), and one batch of answered outcomes waiting for their record
  return { claimAhead, batchSize, unrecordedLimit: o.concurrency + (batches + 1) * batchSize };
}

/**
 * This node's HTTPS transport: on a thread of its own with
 * WEIR_FORWARD_THREAD=on, and with auto on PGlite, whose database runs on
 * the main thread (1.1-1.3x the forwards a second there; on PostgreSQL,
 * whose database runs in processes of its own, measured 0.9-1.2x:
 * docs/forwarding.md). A test that injects a resolver (a function, which
 * cannot cross to a thread) gets the transport in this thread. On its
 * thread it queues attempts itself at the node's concurrency
 * (Transport.queueLimit), so a worker of that concurrency hands it every
 * delivery it holds.
 */
export function forwardTransport(db: Pick<Db, 'kind'>, config: Pick<Config, 'forwardThread' | 'deliveryConcurrency'>, opts: HttpTransportOptions): Transport {
  const threaded = config.forwardThread === 'on' || (config.forwardThread === 'auto' && db.kind === 'pglite');
  if (!threaded || opts.resolver) return new HttpTransport(opts);
  const { resolver: _, ...crossing } = opts;
  return new ThreadedHttpTransport({ ...crossing, queueLimit: config.deliveryConcurrency });
}

/**
 * Starts this node's HTTPS delivery worker. `transport` lets in-process
 * tests trust their test CA or resolve test names; a running Weir trusts
 * extra CAs through NODE_EXTRA_CA_CERTS.
 */
export async function startDelivery(deps: DeliveryDeps, transport: Partial<HttpTransportOptions> = {}): Promise<RunningDelivery> {
  const { db, config, logger } = deps;
  const worker = new DeliveryWorker({
    db,
    logger: logger.child({ component: 'delivery' }),
    node: nodeName(),
    transport: forwardTransport(db, config, {
      allowPrivate: config.allowPrivateDestinations,
      connectTimeoutMs: config.forwardConnectTimeoutMs,
      timeoutMs: config.forwardTimeoutMs,
      ...transport,
    }),
    concurrency: config.deliveryConcurrency,
    ...deliveryQueueFor(db, {
      leaseMs: config.deliveryLeaseMs,
      forwardTimeoutMs: config.forwardTimeoutMs,
      concurrency: config.deliveryConcurrency,
      holdBytes: config.deliveryHoldBytes,
    }),
    leaseMs: config.deliveryLeaseMs,
    pollMs: config.deliveryPollMs,
    metrics: deps.metrics,
    transformLimits: limitsOf(config),
  });
  await worker.start();
  // Deliveries live as long as their captures: past the longest plan
  // retention the capture is gone (its partition dropped), so they go too.
  const sweep = createLoop({
    name: 'delivery_retention',
    everyMs: SWEEP_EVERY_MS,
    metrics: deps.loopMetrics,
    onError: (err) => logger.warn({ err }, 'delivery retention sweep failed; retrying next hour'),
    async pass(signal) {
      const n = await sweepDeliveries(db, new Date(Date.now() - longestRetentionDays(config.plans) * DAY_MS), 5_000, () => signal.aborted);
      if (n > 0) logger.info({ deleted: n }, 'deleted deliveries of captures past retention');
    },
  });
  sweep.start();
  return {
    worker,
    async stop(graceMs) {
      await Promise.all([worker.stop(graceMs), sweep.stop()]);
    },
  };
}
