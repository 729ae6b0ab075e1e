import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { insertCaptures, insertForwardDestination } from '../helpers/fixtures.ts';
import { startReceiver, type Receiver } from '../helpers/https.ts';
import { orgWithEndpoint, startTestWorker, waitForStatus } from './helpers.ts';

/**
 * Spacing is asserted from recorded timestamps as lower bounds only: pacing
 * promises that dispatch k happens no earlier than its slot, k intervals
 * after the first, and a slow machine can only make a dispatch later. A
 * gap between two neighbours proves nothing on a loaded machine (one late
 * start squeezes the next gap, though both kept their slots), so each
 * dispatch is held to its distance from the first, with half an interval
 * of slack in case the first itself started late.
 */
function assertSpaced(times: number[], intervalMs: number, what: string): void {
  const sorted = [...times].sort((a, b) => a - b);
  for (let k = 1; k < sorted.length; k++) {
    const since = sorted[k] - sorted[0];
    assert.ok(since >= (k - 0.5) * intervalMs, `${what}: dispatch ${k} came ${since.toFixed(0)} ms after the first, interval ${intervalMs} ms`);
  }
}

/**
 * Pacing is a promise about dispatch, which the recorded attempt starts
 * show. Arrival times add the network: on a loaded machine the first
 * forward's TLS handshake can land it late, squeezing one gap, so arrivals
 * are held only to their overall spread, with one interval of slack.
 */
function assertArrivalsSpread(times: number[], intervalMs: number, what: string): void {
  const sorted = [...times].sort((a, b) => a - b);
  const span = sorted[sorted.length - 1] - sorted[0];
  assert.ok(span >= (sorted.length - 2) * intervalMs * 0.8, `${what}: ${sorted.length} arrivals span ${span.toFixed(0)} ms`);
}

describe('smooth rate limiting', () => {
  let t: TestDb;
  let workers: DeliveryWorker[] = [];
  const receivers: Receiver[] = [];

  before(async () => {
    t = await openTestDb();
  });
  beforeEach(() => t.reset());
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop(0)));
    workers = [];
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  after(() => t.close());

  for (const threaded of [false, true]) {
    it(`dispatches a rate-limited destination evenly spaced across two workers, without holding up other destinations${threaded ? ', its sends queued on the transport\'s thread' : ''}`, async () => {
      const [paced, free] = [await startReceiver(), await startReceiver()];
      receivers.push(paced, free);
      const ep = await orgWithEndpoint(t.db);
      const perMinute = 120; // one every 500 ms
      await insertForwardDestination(t.db, ep, { url: paced.url, rateLimitPerMinute: perMinute });
      await insertForwardDestination(t.db, ep, { url: free.url });
      const n = 6;
      await insertCaptures(t.db, ep, Array.from({ length: n }, (_, i) => ({ body: `{"i":${i}}` })));
      workers = [await startTestWorker(t.db, { threaded }), await startTestWorker(t.db, { threaded })];
      await waitForStatus(t.db, ['succeeded'], 2 * n);

      const intervalMs = 60_000 / perMinute;
      const { rows } = await t.db.query<{ started_at: Date; paced: boolean; node: string }>(
        `select a.started_at, fd.rate_limit_enabled as paced, a.node
           from delivery_attempts a join deliveries d on d.id = a.delivery_id join forward_destinations fd on fd.id = d.forward_destination_id`,
      );
      const starts = rows.filter((r) => r.paced).map((r) => new Date(r.started_at).getTime());
      assertSpaced(starts, intervalMs, 'recorded attempt starts');
      assertArrivalsSpread(paced.received.map((r) => r.at), intervalMs, 'arrivals at the paced receiver');
      // the unpaced destination was not queued behind the paced one
      const lastFree = Math.max(...free.received.map((r) => r.at));
      const lastPaced = Math.max(...paced.received.map((r) => r.at));
      assert.ok(lastFree < lastPaced, 'the unpaced destination finished before the paced one');
      const { rows: slots } = await t.db.query<{ n: number }>('select count(*)::int as n from destination_pacing');
      assert.equal(slots[0].n, 1);
    });
  }

  for (const threaded of [false, true]) {
    it(`keeps the spacing for deliveries queued while earlier ones wait for their slot${threaded ? ', its sends queued on the transport\'s thread' : ''}`, async () => {
      const rx = await startReceiver();
      receivers.push(rx);
      const ep = await orgWithEndpoint(t.db);
      const perMinute = 150; // one every 400 ms
      await insertForwardDestination(t.db, ep, { url: rx.url, rateLimitPerMinute: perMinute });
      workers = [await startTestWorker(t.db, { threaded })];
      await insertCaptures(t.db, ep, [{ body: '1' }, { body: '2' }]);
      await rx.waitFor(1);
      await insertCaptures(t.db, ep, [{ body: '3' }, { body: '4' }]);
      await waitForStatus(t.db, ['succeeded'], 4);
      const { rows } = await t.db.query<{ started_at: Date }>('select started_at from delivery_attempts');
      assertSpaced(rows.map((r) => new Date(r.started_at).getTime()), 60_000 / perMinute, 'recorded attempt starts');
      assertArrivalsSpread(rx.received.map((r) => r.at), 60_000 / perMinute, 'arrivals');
    });
  }
});
