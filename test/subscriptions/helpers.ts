import { afterEach } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import type { Db } from '../../src/db/db.ts';
import { drainCaptureOutbox } from '../../src/subscriptions/capture-events.ts';
import { EventWorker } from '../../src/subscriptions/event-worker.ts';
import { call } from '../helpers/app.ts';
import { startReceiver, type Received, type Receiver, type ReceiverOptions } from '../helpers/https.ts';
import { silent, testTransport } from '../delivery/helpers.ts';

/** The receiver's view of one event: parsed body, and whether `secret` verifies it (Standard Webhooks' reference library). */
export function verifies(secret: string, r: Received): boolean {
  try {
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

export const bodyOf = (r: Received) => JSON.parse(r.body.toString('utf8'));

/** A started event worker on `db` trusting the test CA (loopback allowed unless told otherwise). */
export async function startEventWorker(db: Db, opts: { allowPrivate?: boolean; concurrency?: number } = {}): Promise<EventWorker> {
  const w = new EventWorker({
    db,
    transport: testTransport({ allowPrivate: opts.allowPrivate ?? true }),
    logger: silent,
    concurrency: opts.concurrency ?? 8,
    leaseMs: 30_000,
    pollMs: 500,
  });
  await w.start();
  return w;
}

/** Runs the request.captured producer until `n` request.captured events are queued in all. */
export async function produceUntil(db: Db, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    await drainCaptureOutbox(db);
    const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from subscription_events where event_type = 'request.captured'`);
    if (rows[0].n >= n) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`produceUntil: fewer than ${n} request.captured events queued`);
}

/** Hooks of an event test: receivers and workers started through it are closed after each test. */
export function useEventFixtures() {
  const receivers: Receiver[] = [];
  const workers: EventWorker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop(1000)));
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  return {
    async receiver(opts?: ReceiverOptions) {
      const r = await startReceiver(opts);
      receivers.push(r);
      return r;
    },
    async worker(db: Db, opts?: { allowPrivate?: boolean; concurrency?: number }) {
      const w = await startEventWorker(db, opts);
      workers.push(w);
      return w;
    },
  };
}

/** POST /v1/subscriptions; throws unless 201. */
export async function subscribe(app: FastifyInstance, key: string, body: Record<string, unknown>): Promise<{ id: string; secret: string; [k: string]: unknown }> {
  const r = await call(app, 'POST', '/v1/subscriptions', { key, body });
  if (r.status !== 201) throw new Error(`subscribe: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.data;
}

/** Waits until the subscription's events have all left the queue (succeeded, failed or dead). */
export async function settled(db: Db, subscriptionId: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from subscription_events where subscription_id = $1::uuid and status in ('pending', 'in_flight')`,
      [subscriptionId],
    );
    if (rows[0].n === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('settled: events still waiting');
}
