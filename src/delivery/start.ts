import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { HttpTransport, type HttpTransportOptions } from './http-transport.ts';
import { DeliveryWorker } from './worker.ts';

export interface DeliveryDeps {
  db: Db;
  config: Config;
  logger: Logger;
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
    transport: new HttpTransport({
      allowPrivate: config.allowPrivateDestinations,
      connectTimeoutMs: config.forwardConnectTimeoutMs,
      timeoutMs: config.forwardTimeoutMs,
      ...transport,
    }),
    concurrency: config.deliveryConcurrency,
    leaseMs: config.deliveryLeaseMs,
    pollMs: config.deliveryPollMs,
  });
  await worker.start();
  return { worker, stop: (graceMs) => worker.stop(graceMs) };
}
