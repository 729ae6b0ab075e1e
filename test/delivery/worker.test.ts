import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../src/db/ids.ts';
import { DAY_MS } from '../../src/requests/partitions.ts';
import { claimDeliveries } from '../../src/delivery/claim.ts';
import { COMPLETE_SETTINGS } from '../../src/delivery/complete.ts';
import { DELIVERY_CHANNEL, forwardTargets, insertDeliveries } from '../../src/delivery/enqueue.ts';
import { deliveryQueueFor } from '../../src/delivery/start.ts';
import type { Db } from '../../src/db/db.ts';
import { sweepDeliveries, sweepStatements } from '../../src/delivery/retention.ts';
import { insertCaptures, insertForwardDestination } from '../helpers/fixtures.ts';
import { startReceiver } from '../helpers/https.ts';
import { genericPlanOf } from '../helpers/plans.ts';
import { idAt } from '../requests/fixtures.ts';
import { attempts, deliveries, orgWithEndpoint, startTestWorker, useWorkerTest, waitForStatus, waitUntil } from './helpers.ts';

/** Test names: the worker's sends queued on the HTTPS transport's own thread (Transport.queueLimit), or through its own send slots. */
const onThread = (threaded: boolean) => (threaded ? ', its sends queued on the transport\'s thread' : '');

describe('delivery worker', () => {
  const t = useWorkerTest({ stopGraceMs: 0 });

  it('is woken by NOTIFY: an idle worker whose poll is far away forwards at once', async () => {
    const rx = await startReceiver();
    t.receivers.push(rx);
    const ep = await orgWithEndpoint(t.db, rx.url);
    const naps: number[] = [];
    let idle!: () => void;
    const wentIdle = new Promise<void>((r) => (idle = r));
    const pollMs = 3600_000;
    t.worker = await startTestWorker(t.db, { pollMs, onIdle: (until) => (naps.push(until), idle()) });
    // the first scan found nothing: the worker sleeps until its poll, an hour away
    await wentIdle;
    assert.equal(naps.length, 1);
    assert.ok(naps[0] - Date.now() > pollMs / 2, 'asleep until the safety poll');
    await insertCaptures(t.db, ep, [{ body: 'now' }]);
    // Only the NOTIFY can wake it before the poll: without it this waits out the receiver's timeout and fails.
    await rx.waitFor(1);
    assert.equal(rx.received[0].body.toString(), 'now');
    assert.ok(naps.length >= 1 && Date.now() < naps[0], 'forwarded while the poll was still far away');
  });

  it('sends one notification per capture batch, not per delivery', async () => {
    const ep = await orgWithEndpoint(t.db, 'https://example.com/a');
    await insertForwardDestination(t.db, ep, { url: 'https://example.com/b' });
    const heard: string[] = [];
    let marker!: () => void;
    const markerHeard = new Promise<void>((r) => (marker = r));
    const unlisten = await t.db.listen(DELIVERY_CHANNEL, (p) => (heard.push(p), p === 'test-marker' && marker()));
    await insertCaptures(t.db, ep, [{ body: '1' }, { body: '2' }, { body: '3' }]);
    // Notifications on one channel arrive in commit order: once this later one
    // is heard, every notification of the batch has been heard too.
    await t.db.query(`select pg_notify($1, 'test-marker')`, [DELIVERY_CHANNEL]);
    await markerHeard;
    await unlisten();
    assert.equal(heard.length, 2, JSON.stringify(heard));
    assert.equal(heard[1], 'test-marker');
    assert.equal((await deliveries(t.db)).length, 6);
  });

  it('gives the leases of unfinished forwards back at shutdown, recording no attempt', async () => {
    const rx = await startReceiver({ reply: () => 'hang' });
    t.receivers.push(rx);
    const ep = await orgWithEndpoint(t.db, rx.url);
    await insertCaptures(t.db, ep, [{ body: 'a' }, { body: 'b' }]);
    t.worker = await startTestWorker(t.db);
    await rx.waitFor(2);
    await t.worker.stop(100);
    t.worker = undefined;
    const ds = await deliveries(t.db);
    assert.deepEqual(ds.map((d) => [d.status, d.attempt_count]), [['pending', 0], ['pending', 0]]);
    assert.ok(ds.every((d) => d.next_attempt_at.getTime() <= Date.now() + 1000), 'due again at once');
    assert.equal((await attempts(t.db)).length, 0);
  });

  it('refuses to abandon one delivery when its deliveries share a signal (only the agent worker abandons)', async () => {
    t.worker = await startTestWorker(t.db);
    await assert.rejects(t.worker.abandon(() => true), /abandonable/);
  });

  it('frees a forward\'s slot when its answer is in: the next forward goes while the outcome waits for its record, whose lease holds meanwhile, and stop() waits for it', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, rx.url);
    // the real database, with the completion statement held back until released
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held = 0;
    // the completion runs with its planner settings (complete.ts, COMPLETE_SETTINGS): held before
    // it starts (on PGlite they are a transaction, which would hold every other statement back too)
    const db: Db = {
      ...t.db,
      withSettings: async (settings, fn) => {
        if (settings === COMPLETE_SETTINGS) {
          held++;
          await gate;
        }
        return t.db.withSettings(settings, fn);
      },
    };
    await insertCaptures(t.db, ep, [{ body: 'first' }]);
    t.worker = await startTestWorker(db, { concurrency: 1 });
    await rx.waitFor(1);
    await waitUntil(async () => held === 1 || undefined, 'the first outcome to wait for its record');
    // the answer is in, its record is held: the delivery is still leased, and no claim takes it again
    const [d] = await deliveries(t.db);
    assert.equal(d.status, 'in_flight');
    assert.equal((await claimDeliveries(t.db, { destinationType: 'https', limit: 10, leaseMs: 60_000, node: 'other' })).claimed.length, 0);
    // with its one slot free again, the worker forwards the next capture while the first record waits
    await insertCaptures(t.db, ep, [{ body: 'second' }]);
    await rx.waitFor(2);
    assert.deepEqual(rx.received.map((r) => r.body.toString()), ['first', 'second']);
    // the receiver logs a request before it answers: wait until the worker has the second answer too,
    // or stop(0) below aborts that forward and gives its lease back (pending, as at least once allows)
    await waitUntil(async () => t.worker!.inFlightDeliveries().length === 0 || undefined, 'the second answer to be in');
    assert.equal((await attempts(t.db)).length, 0, 'nothing recorded yet');
    // stop() returns only once both answered forwards are recorded, each once
    const stopped = t.worker.stop(0);
    t.worker = undefined;
    let done = false;
    void stopped.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(done, false, 'stop() waits for the held records');
    release();
    await stopped;
    assert.deepEqual((await deliveries(t.db)).map((x) => x.status), ['succeeded', 'succeeded']);
    assert.equal((await attempts(t.db)).length, 2);
    assert.equal(rx.received.length, 2, 'each sent once');
  });

  describe('the unrecorded limit', () => {
    /**
     * t.db whose completion statements wait for `gate` before they start
     * (not inside: on PGlite that would hold its one connection's transaction).
     */
    function slowRecords(gate: Promise<void>): Db {
      return {
        ...t.db,
        withSettings: async (settings, fn) => {
          if (settings === COMPLETE_SETTINGS) await gate;
          return t.db.withSettings(settings, fn);
        },
      };
    }

    for (const [limit, expected] of [[undefined, 4], [8, 8]] as const) {
      it(`claims no more than ${expected} while answered forwards wait for their record (unrecordedLimit ${limit ?? 'default: twice the concurrency'})`, async () => {
        let open!: () => void;
        const gate = new Promise<void>((r) => (open = r));
        const rx = await startReceiver();
        t.receivers.push(rx);
        const ep = await orgWithEndpoint(t.db, rx.url);
        await insertCaptures(t.db, ep, Array.from({ length: 12 }, (_, i) => ({ body: `c${i}` })));
        const settledCaptures: unknown[] = [];
        t.worker = await startTestWorker(slowRecords(gate), { concurrency: 2, unrecordedLimit: limit, onSettled: (d) => settledCaptures.push(d.capture) });
        try {
          await rx.waitFor(expected);
          await new Promise((r) => setTimeout(r, 300));
          assert.equal(rx.received.length, expected, 'answered and unrecorded forwards hold the next claims back');
          assert.equal((await deliveries(t.db, "status = 'in_flight'")).length, expected, 'their leases hold until recorded');
        } finally {
          open();
        }
        await waitUntil(async () => (await deliveries(t.db, "status = 'succeeded'")).length === 12 || undefined, 'all twelve delivered');
        assert.equal(rx.received.length, 12, 'each sent once');
        assert.equal((await attempts(t.db)).length, 12);
        await waitUntil(async () => settledCaptures.length === 12 || undefined, 'all settled');
        assert.ok(settledCaptures.every((c) => c === null), 'an answered delivery no longer holds its captured request');
      });
    }
  });

  describe('claim-ahead', () => {
    const gated = () => {
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      return { gate, open };
    };

    /**
     * A worker of concurrency 2 and batches of 4, `batches` batches held
     * ahead, both send slots held by the receiver, and `more` captures
     * arriving behind them: it holds the two it sends and `batches`
     * batches, sends no more than two at once, leaves the rest pending for
     * other nodes, and once let through sends every capture once, the held
     * ones in claim order.
     */
    async function drainAhead(o: { threaded: boolean; batches?: number; more: number }) {
      const held = 2 + 4 * (o.batches ?? 1);
      const { gate, open } = gated();
      const rx = await startReceiver({ reply: () => ({ until: gate }) });
      t.receivers.push(rx);
      const ep = await orgWithEndpoint(t.db, rx.url);
      const first = await insertCaptures(t.db, ep, [{ body: 'c0' }, { body: 'c1' }]);
      const claimAhead = { maxWaitMs: 60_000, ...(o.batches && { batches: o.batches }) };
      t.worker = await startTestWorker(t.db, { concurrency: 2, batchSize: 4, pollMs: 3_600_000, claimAhead, threaded: o.threaded });
      assert.equal((t.worker as unknown as { queued: boolean }).queued, o.threaded, 'a transport queueing at the worker\'s concurrency takes every held delivery');
      await rx.waitFor(2);
      // a backlog arrives while both slots are busy: the next claims take batches of two concurrencies
      const rest = await insertCaptures(t.db, ep, Array.from({ length: o.more }, (_, i) => ({ body: `c${i + 2}` })));
      await waitUntil(async () => t.worker!.inFlightDeliveries().length === held || undefined, `${held} deliveries held`);
      await new Promise((r) => setTimeout(r, 150));
      assert.equal(t.worker.inFlightDeliveries().length, held, 'the two being sent and the batches ahead, no more');
      assert.equal(rx.received.length, 2, 'no more sends than the concurrency');
      assert.deepEqual(new Set(rx.received.map((r) => r.body.toString())), new Set(['c0', 'c1']));
      assert.equal((await deliveries(t.db, "status = 'in_flight'")).length, held);
      assert.equal((await deliveries(t.db, "status = 'pending'")).length, 2 + o.more - held, 'the rest left for other nodes');
      open();
      const all = 2 + o.more;
      await waitUntil(async () => (await deliveries(t.db, "status = 'succeeded'")).length === all || undefined, `all ${all} delivered`);
      assert.equal(rx.received.length, all, 'each sent once');
      // Sends start in claim order, two at a time, but two in flight may reach the receiver in
      // either order (one may open a new connection), so arrival order proves only this: c<j> starts
      // once all but one of c0..c<j-1> are answered, so at least j-1 arrivals come before it.
      const arrived = rx.received.map((r) => Number(r.body.toString().slice(1)));
      const early = arrived.map((n, position) => ({ n, position })).filter(({ n, position }) => position < n - 1);
      assert.deepEqual(early, [], `the held ones went in claim order, at most two at a time (arrivals: ${arrived.join(', ')})`);
      assert.equal((await attempts(t.db)).length, all);
      assert.deepEqual(new Set((await deliveries(t.db)).map((d) => d.request_id)), new Set([...first, ...rest].map((c) => c.id)));
    }

    for (const threaded of [false, true]) {
      it(`with batches of two concurrencies, claims a backlog a batch at a time and holds up to three concurrencies, but sends no more than its concurrency at once, the held ones in claim order, each once${onThread(threaded)}`, () =>
        drainAhead({ threaded, more: 8 }));
      it(`with two batches ahead, holds up to the concurrency and two batches, leaves the rest to other nodes, each sent once in claim order${onThread(threaded)}`, () =>
        drainAhead({ threaded, batches: 2, more: 12 }));
    }

    /**
     * A worker of concurrency 2 and batches of 4, both send slots held by
     * the receiver, and 8 more captures of `kib` KiB each arriving behind
     * them: how many it holds once it stops claiming. Then everything is
     * let through, and each capture must arrive once, with no safety poll
     * before the test's timeout (a stalled claim would wait for it).
     */
    async function heldBehindBusySlots(o: { kib: number; holdBytes: number }) {
      const { gate, open } = gated();
      const rx = await startReceiver({ reply: () => ({ until: gate }) });
      t.receivers.push(rx);
      const ep = await orgWithEndpoint(t.db, rx.url);
      const body = (i: number) => `c${i}`.padEnd(o.kib * 1024, '.');
      await insertCaptures(t.db, ep, [{ body: body(0) }, { body: body(1) }]);
      t.worker = await startTestWorker(t.db, { concurrency: 2, batchSize: 4, pollMs: 3_600_000, claimAhead: { maxWaitMs: 60_000, holdBytes: o.holdBytes } });
      await rx.waitFor(2);
      await insertCaptures(t.db, ep, Array.from({ length: 8 }, (_, i) => ({ body: body(i + 2) })));
      let held = 0;
      // settles once the worker holds the same number for 300 ms
      for (let last = -1; held !== last; await new Promise((r) => setTimeout(r, 300))) [last, held] = [held, t.worker.inFlightDeliveries().length];
      const sent = rx.received.length;
      assert.deepEqual(t.worker.held(), { deliveries: held, bytes: held * o.kib * 1024 }, 'the held bodies\' bytes, as the metrics report them');
      open();
      await waitUntil(async () => (await deliveries(t.db, "status = 'succeeded'")).length === 10 || undefined, 'all ten delivered');
      // two sends at a time may arrive in either order: each once is what holds
      const arrived = rx.received.map((r) => Number(r.body.toString().split('.')[0].slice(1)));
      assert.deepEqual(arrived.sort((a, b) => a - b), [...Array(10).keys()], 'each once');
      return { held, sent };
    }

    it('holds no more captured bodies ahead of its send slots than the byte budget has room for at the last claim\'s mean body size', async () => {
      // 2 KiB bodies, a 7 KiB budget: the two being sent hold 4 KiB, so one more fits, not a batch
      const { held, sent } = await heldBehindBusySlots({ kib: 2, holdBytes: 7 * 1024 });
      assert.equal(sent, 2, 'no more sends than the concurrency');
      assert.equal(held, 3, 'the two being sent and one more within the budget');
    });

    it('holds none ahead when the bodies being sent already fill the budget, and claims as the send slots free up', async () => {
      const { held } = await heldBehindBusySlots({ kib: 4, holdBytes: 4 * 1024 });
      assert.equal(held, 2, 'only the two being sent');
    });

    it('with a budget of 0 holds only what it sends, and still drains a backlog a claim at a time as send slots free up', async () => {
      // a backlog's usual threshold (a batch less half a concurrency, 3) is more than the two slots
      // a budget of 0 ever leaves a claim: it would wait for the safety poll, an hour away
      const { held } = await heldBehindBusySlots({ kib: 1, holdBytes: 0 });
      assert.equal(held, 2);
    });

    it('holds a whole batch ahead when the bodies are small beside the budget', async () => {
      const { held } = await heldBehindBusySlots({ kib: 1, holdBytes: 1 << 20 });
      assert.equal(held, 6, 'three concurrencies, as without a budget');
    });

    it('takes two concurrencies a claim on both databases, holds two batches ahead on PGlite and one on PostgreSQL; none ahead without room in the lease', () => {
      const o = { leaseMs: 60_000, forwardTimeoutMs: 30_000, concurrency: 32, holdBytes: 1 << 26 };
      const claimAhead = { maxWaitMs: 28_000, holdBytes: 1 << 26 };
      // held: 32 sending and the batches of 64 waiting; recorded: those and one batch of answered outcomes
      assert.deepEqual(deliveryQueueFor({ kind: 'pglite' }, o), { claimAhead: { ...claimAhead, batches: 2 }, batchSize: 64, unrecordedLimit: 224 });
      assert.deepEqual(deliveryQueueFor({ kind: 'postgres' }, o), { claimAhead: { ...claimAhead, batches: 1 }, batchSize: 64, unrecordedLimit: 160 });
      // a lease leaving less than 5 s to wait: sends as they are claimed, a batch of one concurrency
      const short = { ...o, leaseMs: 36_000 };
      assert.deepEqual(deliveryQueueFor({ kind: 'pglite' }, short), { unrecordedLimit: 64 });
      assert.deepEqual(deliveryQueueFor({ kind: 'postgres' }, short), { claimAhead: undefined, unrecordedLimit: 160 });
    });

    for (const threaded of [false, true]) {
      it(`gives a held delivery's lease back, unsent, once it has waited too long for its attempt to fit in the lease; a later claim sends it${onThread(threaded)}`, async () => {
        const { gate, open } = gated();
        const rx = await startReceiver({ reply: (_r, i) => (i === 0 ? { until: gate } : {}) });
        t.receivers.push(rx);
        const ep = await orgWithEndpoint(t.db, rx.url);
        await insertCaptures(t.db, ep, [{ body: 'first' }, { body: 'second' }]);
        let released = 0;
        const db: Db = {
          ...t.db,
          query: (text, params, opts) => {
            if (/where lease_id = any/.test(text)) released++; // releaseLeases
            return t.db.query(text, params, opts);
          },
        };
        t.worker = await startTestWorker(db, { concurrency: 1, claimAhead: { maxWaitMs: 200 }, threaded });
        await rx.waitFor(1);
        await waitUntil(async () => t.worker!.inFlightDeliveries().length === 2 || undefined, 'the second held behind the first');
        await new Promise((r) => setTimeout(r, 300));
        open();
        await waitUntil(async () => (await deliveries(t.db, "status = 'succeeded'")).length === 2 || undefined, 'both delivered');
        assert.equal(released, 1, `the second one's lease was given back once, not ${released} times`);
        assert.deepEqual(rx.received.map((r) => r.body.toString()), ['first', 'second']);
        assert.deepEqual((await deliveries(t.db)).map((d) => d.attempt_count), [1, 1]);
      });
    }

    for (const threaded of [false, true]) {
      it(`gives back the leases of held deliveries at shutdown, unsent, recording no attempt${onThread(threaded)}`, async () => {
        const rx = await startReceiver({ reply: () => 'hang' });
        t.receivers.push(rx);
        const ep = await orgWithEndpoint(t.db, rx.url);
        await insertCaptures(t.db, ep, [{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
        t.worker = await startTestWorker(t.db, { concurrency: 1, claimAhead: { maxWaitMs: 60_000 }, threaded });
        await rx.waitFor(1);
        await waitUntil(async () => t.worker!.inFlightDeliveries().length === 2 || undefined, 'one held behind the one sent');
        await t.worker.stop(100);
        t.worker = undefined;
        assert.equal(rx.received.length, 1, 'the held one was not sent');
        const ds = await deliveries(t.db);
        assert.deepEqual(ds.map((d) => [d.status, d.attempt_count]), [['pending', 0], ['pending', 0], ['pending', 0]]);
        assert.equal((await attempts(t.db)).length, 0);
      });
    }
  });

  it('claims again a delivery whose lease expired (its worker died) and delivers it', async () => {
    const rx = await startReceiver();
    t.receivers.push(rx);
    const ep = await orgWithEndpoint(t.db, rx.url);
    const [c] = await insertCaptures(t.db, ep, [{ body: 'orphan' }]);
    // a worker that claimed it and vanished
    const { claimed } = await claimDeliveries(t.db, { destinationType: 'https', limit: 10, leaseMs: 60_000, node: 'dead-node' });
    assert.equal(claimed.length, 1);
    await t.db.query(`update deliveries set lease_until = now() - interval '1 second'`);
    t.worker = await startTestWorker(t.db, { pollMs: 200 });
    await waitForStatus(t.db, ['succeeded'], 1);
    assert.equal(rx.received[0].headers['webhook-id'], `msg_${c.id}`);
    const [a] = await attempts(t.db);
    assert.notEqual(a.node, 'dead-node');
  });

  it('finishes quietly when the endpoint is deleted while its forward is in flight', { timeout: 30_000 }, async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const rx = await startReceiver({ reply: () => ({ status: 200, delayMs: 300 }) });
    t.receivers.push(rx);
    const ep = await orgWithEndpoint(t.db, rx.url);
    await insertCaptures(t.db, ep, [{ body: 'x' }]);
    const settled: string[] = [];
    t.worker = await startTestWorker(t.db, { onSettled: (_d, status) => (settled.push(status), release()) });
    await rx.waitFor(1);
    await t.db.query('delete from endpoints where id = $1::uuid', [ep.id]);
    await gate;
    assert.deepEqual(settled, ['succeeded']);
    assert.equal((await deliveries(t.db)).length, 0);
    assert.equal((await attempts(t.db)).length, 0);
  });

  it('never claims a delivery twice while its lease holds', async () => {
    const ep = await orgWithEndpoint(t.db, 'https://example.com/');
    await insertCaptures(t.db, ep, Array.from({ length: 10 }, (_, i) => ({ body: String(i) })));
    const claims = await Promise.all(
      Array.from({ length: 4 }, (_, i) => claimDeliveries(t.db, { destinationType: 'https', limit: 4, leaseMs: 60_000, node: `n${i}` })),
    );
    const ids = claims.flatMap((c) => c.claimed.map((d) => d.id));
    assert.equal(ids.length, 10);
    assert.equal(new Set(ids).size, 10);
    const again = await claimDeliveries(t.db, { destinationType: 'https', limit: 10, leaseMs: 60_000, node: 'late' });
    assert.equal(again.claimed.length, 0);
  });

  it('leaves agent deliveries for the agent gateway', async () => {
    const ep = await orgWithEndpoint(t.db);
    const agentId = newId();
    await t.db.query(
      `insert into agents (id, organization_id, name, environment, token_hash) values ($1::uuid, $2::uuid, 'laptop', 'development', $3::bytea)`,
      [agentId, ep.organization_id, Buffer.from(agentId)],
    );
    await insertForwardDestination(t.db, ep, { agentId, targetPort: 3000, targetPath: '/hook' });
    await insertCaptures(t.db, ep, [{ body: 'for the agent' }]);
    const https = await claimDeliveries(t.db, { destinationType: 'https', limit: 10, leaseMs: 60_000, node: 'n' });
    assert.equal(https.claimed.length, 0);
    const elsewhere = await claimDeliveries(t.db, { destinationType: 'agent', agentIds: [newId()], limit: 10, leaseMs: 60_000, node: 'n' });
    assert.equal(elsewhere.claimed.length, 0, 'another agent’s node does not take it');
    const gateway = await claimDeliveries(t.db, { destinationType: 'agent', agentIds: [agentId], limit: 10, leaseMs: 60_000, node: 'n' });
    assert.equal(gateway.claimed.length, 1);
    assert.equal(gateway.claimed[0].agentId, agentId);
    assert.equal(gateway.claimed[0].capture?.body.toString(), 'for the agent');
  });

  it('deletes the deliveries of captures past retention, their own and their replays\', but not in-flight ones nor those of newer captures', async () => {
    const ep = await orgWithEndpoint(t.db, 'https://example.com/');
    const oldMs = Date.now() - 400 * DAY_MS;
    const [old, busy, fresh] = await insertCaptures(t.db, ep, [{ id: idAt(oldMs), body: 'old' }, { id: idAt(oldMs), body: 'old, in flight' }, { body: 'new' }]);
    const [target] = await forwardTargets(t.db, [ep.id]);
    // replays: deliveries with ids of their own, made now, of the old capture and of the new one
    const replays = [old, fresh].map((c) => ({ id: newId(), organizationId: ep.organization_id, requestId: c.id, requestReceivedAt: c.receivedAt, target, replayBatchId: null }));
    await insertDeliveries(t.db, replays);
    const own = async (c: { id: string }) => (await deliveries(t.db, 'request_id = $1 and id <> all($2::uuid[])', [c.id, replays.map((r) => r.id)]))[0];
    const busyOwn = await own(busy);
    await t.db.query(`update deliveries set status = 'in_flight', lease_until = now() + interval '1 minute' where id = $1::uuid`, [busyOwn.id]);
    const deleted = await sweepDeliveries(t.db, new Date(Date.now() - 365 * DAY_MS), 1);
    assert.equal(deleted, 2, 'the old capture\'s own delivery and its replay');
    const left = (await deliveries(t.db)).map((d) => d.id);
    assert.deepEqual(new Set(left), new Set([busyOwn.id, (await own(fresh)).id, replays[1].id]));
  });

  it('finds old deliveries through the primary key and the replays\' partial index, never by reading the whole table', async () => {
    const plans = [];
    for (const { text, params } of sweepStatements(new Date(), 100)) {
      plans.push(await genericPlanOf(t.db, text, params.length, { enable_seqscan: 'off', enable_bitmapscan: 'off' }));
    }
    assert.match(plans[0], /Index Scan using deliveries_pkey on deliveries deliveries_1/, plans[0]);
    assert.match(plans[1], /Index Scan using deliveries_replayed_received on deliveries deliveries_1/, plans[1]);
  });
});
