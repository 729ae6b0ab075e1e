import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { CLAIM_SETTINGS } from '../../src/delivery/claim.ts';
import { DELIVERY_CHANNEL } from '../../src/delivery/enqueue.ts';
import type { Handoff } from '../../src/delivery/handoff.ts';
import type { ClaimedDelivery } from '../../src/delivery/transport.ts';
import { storeCaptures } from '../../src/ingest/store.ts';
import { captureOf, insertCaptures, insertForwardDestination } from '../helpers/fixtures.ts';
import { attempts, deliveries, orgWithEndpoint, startTestWorker, useWorkerTest, waitForStatus, waitUntil } from './helpers.ts';

/** A hand-off that records what it is given and sends nothing (a node that died right after its capture statement). */
function recorder(room: number, leaseMs = 30_000): Handoff & { adopted: ClaimedDelivery[] } {
  const adopted: ClaimedDelivery[] = [];
  return { leaseMs, node: 'recorder', room: () => room, adopt: (d) => void adopted.push(...d), adopted };
}

/** The worker's database, counting the claims it runs that claimed something (withSettings with the claim's settings). */
function countingClaims(db: Db): { db: Db; claims: () => number } {
  let claims = 0;
  return {
    db: {
      ...db,
      withSettings: async (settings, fn) => {
        const result = await db.withSettings(settings, fn);
        if (settings === CLAIM_SETTINGS && (result as { claimed?: unknown[] }).claimed?.length) claims++;
        return result;
      },
    },
    claims: () => claims,
  };
}

/** The DELIVERY_CHANNEL notifications heard until a marker sent after `run` (notifications arrive in commit order). */
async function notificationsDuring(db: Db, run: () => Promise<unknown>): Promise<number> {
  const heard: string[] = [];
  let marker!: () => void;
  const markerHeard = new Promise<void>((r) => (marker = r));
  const unlisten = await db.listen(DELIVERY_CHANNEL, (p) => (p === 'test-marker' ? marker() : heard.push(p)));
  await run();
  await db.query(`select pg_notify($1, 'test-marker')`, [DELIVERY_CHANNEL]);
  await markerHeard;
  await unlisten();
  return heard.length;
}

describe('hand-off: the capture statement leases a fresh forward to this node\'s worker', () => {
  const t = useWorkerTest({ stopGraceMs: 0 });

  it('an idle worker sends a fresh capture byte-exact without a claim, and no NOTIFY goes out for it', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, rx.url);
    const counted = countingClaims(t.db);
    let idle!: () => void;
    const wentIdle = new Promise<void>((r) => (idle = r));
    t.worker = await startTestWorker(counted.db, { pollMs: 3600_000, onIdle: () => idle() });
    await wentIdle;
    const claimsBefore = counted.claims();
    const body = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x0d, 0x0a, 0x80]);
    const cap = captureOf(ep, { body, headers: [['Content-Type', 'application/octet-stream'], ['X-Custom', 'a'], ['x-custom', 'b']] });
    const notified = await notificationsDuring(t.db, async () => assert.deepEqual(await storeCaptures(t.db, [cap], t.worker!.handoff()), ['stored']));
    await rx.waitFor(1);
    assert.deepEqual(rx.received[0].body, body);
    assert.deepEqual(
      rx.received[0].rawHeaders.filter((_, i, a) => i % 2 === 0 && /^x-custom$/i.test(a[i])).length,
      2,
      'both X-Custom headers forwarded',
    );
    await waitForStatus(t.db, ['succeeded'], 1);
    assert.equal(counted.claims(), claimsBefore, 'no claim took the handed delivery');
    assert.equal(notified, 0, 'no NOTIFY: nothing was left pending');
    const [a] = await attempts(t.db);
    assert.equal(a.attempt_number, 1);
    assert.equal(a.status_code, 200);
    assert.equal(a.node, t.worker.handoff().node);
  });

  it('hands off at most `room` deliveries, in id order, and never a rate-limited or an agent destination\'s', async () => {
    const ep = await orgWithEndpoint(t.db, 'https://receiver.example/forward-url');
    await insertForwardDestination(t.db, ep, { url: 'https://receiver.example/limited', sortOrder: 0, rateLimitPerMinute: 60 });
    await insertForwardDestination(t.db, ep, { url: 'https://receiver.example/second', sortOrder: 1 });
    await insertForwardDestination(t.db, ep, { url: 'https://receiver.example/third', sortOrder: 2 });
    const h = recorder(2, 45_000);
    const caps = [captureOf(ep, { body: 'a' })];
    assert.deepEqual(await storeCaptures(t.db, caps, h), ['stored']);
    const rows = await deliveries(t.db);
    assert.equal(rows.length, 4);
    const leased = rows.filter((r) => r.status === 'in_flight').map((r) => r.url);
    // the forward_url first, then the first unlimited destination; the limited one and the third wait
    assert.deepEqual(leased, ['https://receiver.example/forward-url', 'https://receiver.example/second']);
    assert.deepEqual(h.adopted.map((d) => d.url), leased);
    const { rows: leases } = await t.db.query<{ leased_by: string; lease_id: string; secs: number }>(
      `select leased_by, lease_id, extract(epoch from lease_until - now())::float8 as secs from deliveries where status = 'in_flight' order by id`,
    );
    assert.deepEqual(leases.map((l) => l.leased_by), ['recorder', 'recorder']);
    assert.deepEqual(leases.map((l) => l.lease_id), h.adopted.map((d) => d.leaseId));
    for (const l of leases) assert.ok(l.secs > 40 && l.secs <= 45, `a lease of the hand-off's leaseMs: ${l.secs}s`);
    // what the worker is given is what a claim would give it
    const d = h.adopted[1];
    assert.equal(d.attemptNumber, 1);
    assert.equal(d.capture?.body.toString(), 'a');
    assert.equal(d.organizationId, ep.organization_id);
    assert.equal(d.requestId, caps[0].id);
    assert.deepEqual(d.retry.schedule, [5, 300, 1800, 7200, 18000, 36000, 36000]);
  });

  it('hands off nothing while an HTTPS delivery is due and waiting: a claim takes the older one first', async () => {
    const ep = await orgWithEndpoint(t.db, 'https://receiver.example/forward-url');
    await insertCaptures(t.db, ep, [{ body: 'older' }]);
    const h = recorder(8);
    const notified = await notificationsDuring(t.db, () => storeCaptures(t.db, [captureOf(ep, { body: 'newer' })], h));
    assert.equal(h.adopted.length, 0);
    assert.deepEqual((await deliveries(t.db)).map((r) => r.status), ['pending', 'pending']);
    assert.equal(notified, 1, 'the workers are woken for it, as before');
  });

  it('without room it changes nothing: pending, and a NOTIFY', async () => {
    const ep = await orgWithEndpoint(t.db, 'https://receiver.example/forward-url');
    const h = recorder(0);
    const notified = await notificationsDuring(t.db, () => storeCaptures(t.db, [captureOf(ep, { body: 'x' })], h));
    assert.equal(h.adopted.length, 0);
    assert.deepEqual((await deliveries(t.db)).map((r) => [r.status, r.attempt_count]), [['pending', 0]]);
    assert.equal(notified, 1);
  });

  it('a worker with its send slots busy, or stopped, has no room', async () => {
    const rx = await t.receiver({ reply: () => 'hang' });
    const ep = await orgWithEndpoint(t.db, rx.url);
    t.worker = await startTestWorker(t.db, { concurrency: 2 });
    assert.equal(t.worker.handoff().room(), 2);
    await insertCaptures(t.db, ep, [{ body: '1' }, { body: '2' }]);
    await rx.waitFor(2);
    assert.equal(t.worker.handoff().room(), 0);
    await t.worker.stop(0);
    assert.equal(t.worker.handoff().room(), 0);
  });

  it('a worker stopped between room() and the commit gives the handed leases back: due now, for any node', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, rx.url);
    const stopped = await startTestWorker(t.db);
    const h = stopped.handoff();
    await stopped.stop(0);
    await storeCaptures(t.db, [captureOf(ep, { body: 'orphan' })], { ...h, room: () => 1 });
    await waitUntil(async () => (await deliveries(t.db))[0]?.status === 'pending', 'the lease given back');
    t.worker = await startTestWorker(t.db);
    await rx.waitFor(1);
    assert.equal(rx.received[0].body.toString(), 'orphan');
    await waitForStatus(t.db, ['succeeded'], 1);
    assert.equal((await attempts(t.db)).length, 1);
  });

  it('a handed delivery its node never sent (it died) is sent by another worker once the lease runs out, once', async () => {
    const rx = await t.receiver();
    const ep = await orgWithEndpoint(t.db, rx.url);
    const dead = recorder(1, 300);
    await storeCaptures(t.db, [captureOf(ep, { body: 'lost?' })], dead);
    assert.equal(dead.adopted.length, 1);
    assert.deepEqual((await deliveries(t.db)).map((r) => r.status), ['in_flight']);
    t.worker = await startTestWorker(t.db, { pollMs: 200 });
    await rx.waitFor(1);
    assert.equal(rx.received[0].body.toString(), 'lost?');
    await waitForStatus(t.db, ['succeeded'], 1);
    const all = await attempts(t.db);
    assert.equal(all.length, 1);
    assert.equal(all[0].attempt_number, 1);
    assert.equal(rx.received.length, 1);
  });
});
