import { newId } from '../src/db/ids.ts';
import { idTime } from '../src/requests/capture-ids.ts';
import type { Capture } from '../src/requests/captures.ts';
import { loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/db.ts';
import { forwardTransport } from '../src/delivery/start.ts';
import type { Transport } from '../src/delivery/transport.ts';
import { testCa } from '../test/helpers/https.ts';
/**
 * The webhook the forwarding benchmarks send (bench/forward.ts,
 * bench/forward-trees.ts) and how many forwards a worker runs at once, so
 * that their rates measure the same thing: a Stripe-like JSON event.
 */
export const CONCURRENCY = 32;
export const BODY = Buffer.from(JSON.stringify({ id: 'evt_bench', type: 'charge.succeeded', data: { object: { amount: 2000, currency: 'usd', pad: 'x'.repeat(800) } } }));
export const HEADERS: Array<[string, string]> = [
  ['Content-Type', 'application/json'],
  ['User-Agent', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)'],
  ['Stripe-Signature', 't=1700000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd'],
];

/** `n` captures of this webhook to one endpoint, as the ingest batcher hands a group to storeCaptures. */
export function benchCaptures(organizationId: string, endpointId: string, n: number): Capture[] {
  return Array.from({ length: n }, () => {
    const id = newId();
    return { id, organization_id: organizationId, endpoint_id: endpointId, received_at: new Date(idTime(id)), method: 'POST', path: '', query: '', headers: HEADERS, body: BODY, body_size: BODY.length, content_type: 'application/json', source_ip: null };
  });
}

/**
 * The HTTPS transport startDelivery gives `db` (on PGlite a thread of its
 * own unless WEIR_FORWARD_THREAD=off), trusting the test CA the receiver's
 * certificate is signed by.
 */
export function benchTransport(db: Pick<Db, 'kind'>): Transport {
  return forwardTransport(db, loadConfig({ WEIR_FORWARD_THREAD: process.env.WEIR_FORWARD_THREAD }), { allowPrivate: true, connectTimeoutMs: 10_000, timeoutMs: 30_000, ca: testCa().ca });
}

/**
 * `t` for one bench worker after another: a worker's stop() closes its
 * transport, so this one's close() does nothing (the bench closes `t`), and
 * the transport's own queue is passed through (Transport.queueLimit,
 * sendQueued), as startDelivery's worker uses it. `onSend` runs as each
 * delivery is handed over.
 */
export function keptOpen(t: Transport, onSend?: () => void): Transport {
  const sendQueued = t.sendQueued?.bind(t);
  return {
    destinationType: t.destinationType,
    send: (d, signal) => (onSend?.(), t.send(d, signal)),
    ...(t.queueLimit !== undefined && sendQueued && { queueLimit: t.queueLimit, sendQueued: (d, signal, startBy) => (onSend?.(), sendQueued(d, signal, startBy)) }),
    close: async () => {},
  };
}
