import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../src/db/ids.ts';
import { storeCaptures } from '../../src/ingest/store.ts';
import { drainCaptureOutbox } from '../../src/subscriptions/capture-events.ts';
import { insertEvents } from '../../src/subscriptions/emit.ts';
import { claimEvents, completeEvent, nextEventDueAt, releaseEventLeases } from '../../src/subscriptions/queue.ts';
import { createSubscription } from '../../src/subscriptions/subscriptions.ts';
import { seedOrg, useTestApp } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';
import { captureOf, insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';
import { bodyOf, subscribe, useEventFixtures } from './helpers.ts';

/** Whole numbers from the environment, for the tests whose size a slow machine may want smaller. */
const count = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

describe('subscription event guarantees', () => {
  const t = useTestApp();
  const f = useEventFixtures();

  async function capturedEvents(subscriptionId: string): Promise<string[]> {
    const { rows } = await t.db.query<{ source_id: string }>(
      `select source_id from subscription_events where subscription_id = $1::uuid and event_type = 'request.captured' order by seq`,
      [subscriptionId],
    );
    return rows.map((r) => r.source_id);
  }

  it('announces a capture that committed long after it arrived (after later captures were announced), exactly once', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const created = await createSubscription(t.db, { organizationId: s.org.id, targetUrl: 'https://example.com/hook', eventTypes: ['request.captured'], createdBy: null });
    assert.ok(created.ok);
    // the subscription was created two minutes ago (its id carries when: captures from then on are its)
    const subId = newId(Date.now() - 120_000);
    await t.db.query(`update subscriptions set id = $2::uuid where id = $1::uuid`, [created.subscription.id, subId]);
    const [first] = await insertCaptures(t.db, endpoint, [{ body: 'on time' }]);
    assert.equal(await drainCaptureOutbox(t.db), 1);
    // arrived a minute ago, commits only now: far past any settle window a time cursor could use
    const late = captureOf(endpoint, { id: newId(Date.now() - 60_000), body: 'late' });
    assert.deepEqual(await storeCaptures(t.db, [late]), ['stored']);
    assert.equal(await drainCaptureOutbox(t.db), 1);
    assert.equal(await drainCaptureOutbox(t.db), 0);
    assert.deepEqual(await capturedEvents(subId), [first.id, late.id]);
  });

  it('announces a capture whose transaction is held open while the producer runs, once it commits, exactly once', { skip: onPostgres ? false : 'PGlite runs one transaction at a time: no capture can be held open beside the producer' }, async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const receiver = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.captured'] });
    const held = captureOf(endpoint, { body: 'held open' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let stored!: () => void;
    const inTx = new Promise<void>((r) => (stored = r));
    const tx = t.db.transaction(async (q) => {
      assert.deepEqual(await storeCaptures(q, [held]), ['stored']);
      stored();
      await gate;
    });
    await inTx;
    // later captures commit and are announced while the first is still uncommitted
    const later = await insertCaptures(t.db, endpoint, [{ body: 'later 1' }, { body: 'later 2' }]);
    await drainCaptureOutbox(t.db);
    assert.deepEqual(await capturedEvents(sub.id), later.map((c) => c.id));
    release();
    await tx;
    await drainCaptureOutbox(t.db);
    await drainCaptureOutbox(t.db);
    assert.deepEqual(await capturedEvents(sub.id), [...later.map((c) => c.id), held.id]);
  });

  it('writes no announcement for an organization without request.captured subscriptions', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const other = await seedOrg(t.db);
    const receiver = await f.receiver();
    await subscribe(t.app, other.key, { target_url: receiver.url, event_types: ['request.captured'] });
    await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['incident.opened'] });
    await insertCaptures(t.db, endpoint, [{ body: 'x' }, { body: 'y' }]);
    const { rows } = await t.db.query<{ n: number }>(`select count(*)::int as n from capture_announcements`);
    assert.equal(rows[0].n, 0);
  });

  it(`serves every one of ${count('WEIR_TEST_SUBSCRIPTIONS', 1000)} subscriptions`, async () => {
    const n = count('WEIR_TEST_SUBSCRIPTIONS', 1000);
    const receiver = await f.receiver();
    const orgs = await Promise.all(Array.from({ length: 10 }, () => seedOrg(t.db)));
    const endpoints = await Promise.all(orgs.map((o) => insertEndpoint(t.db, o.org.id)));
    const subs: string[] = [];
    for (let i = 0; i < n; i++) {
      const o = orgs[i % orgs.length];
      const r = await createSubscription(t.db, { organizationId: o.org.id, targetUrl: `${receiver.url}/s/${i}`, eventTypes: ['request.captured'], createdBy: null });
      assert.ok(r.ok);
      subs.push(r.subscription.id);
    }
    for (const e of endpoints) await insertCaptures(t.db, e, [{ body: `{"org":"${e.organization_id}"}` }]);
    assert.equal(await drainCaptureOutbox(t.db), n);
    await f.worker(t.db, { concurrency: 32 });
    const got = await receiver.waitFor(n, 240_000);
    const paths = new Set(got.map((r) => r.url));
    assert.equal(paths.size, n, 'each subscription received its event');
    for (let i = 0; i < n; i++) assert.ok(paths.has(`/s/${i}`), `subscription ${i} received`);
    assert.ok(got.every((r) => bodyOf(r).type === 'request.captured'));
  });

  it(`serves ${count('WEIR_TEST_HEALTHY', 200)} healthy subscriptions next to a failing one with a ${count('WEIR_TEST_BACKLOG', 5000)}-event backlog`, async () => {
    const healthy = count('WEIR_TEST_HEALTHY', 200);
    const backlog = count('WEIR_TEST_BACKLOG', 5000);
    const s = await seedOrg(t.db);
    const failing = await f.receiver({ reply: () => ({ status: 503 }) });
    const good = await f.receiver();
    const bad = await createSubscription(t.db, { organizationId: s.org.id, targetUrl: failing.url, eventTypes: ['incident.opened'], createdBy: null });
    assert.ok(bad.ok);
    // the backlog is queued first: the oldest due events of the whole queue are the failing subscription's
    const event = { organizationId: s.org.id, type: 'incident.opened' as const, data: { object: { n: 0 } } };
    for (let i = 0; i < backlog; i += 1000) {
      await t.db.transaction((tx) => insertEvents(tx, Array.from({ length: Math.min(1000, backlog - i) }, () => ({ subscriptionId: bad.subscription.id, event }))));
    }
    const ids: string[] = [];
    for (let i = 0; i < healthy; i++) {
      const r = await createSubscription(t.db, { organizationId: s.org.id, targetUrl: `${good.url}/h/${i}`, eventTypes: ['incident.resolved'], createdBy: null });
      assert.ok(r.ok);
      ids.push(r.subscription.id);
    }
    await t.db.transaction((tx) =>
      insertEvents(tx, ids.map((id) => ({ subscriptionId: id, event: { ...event, type: 'incident.resolved' as const } }))),
    );
    await f.worker(t.db, { concurrency: 16 });
    const got = await good.waitFor(healthy, 240_000);
    assert.equal(new Set(got.map((r) => r.url)).size, healthy);
    // one event of the failing subscription at a time: its backlog is still there, untouched but for its head
    const { rows } = await t.db.query<{ pending: number; tried: number }>(
      `select count(*) filter (where status = 'pending')::int as pending, count(*) filter (where attempt_count > 0)::int as tried
         from subscription_events where subscription_id = $1::uuid`,
      [bad.subscription.id],
    );
    assert.ok(rows[0].pending >= backlog - 1, `the backlog waits (${rows[0].pending} pending)`);
    assert.ok(failing.received.length >= 1, 'the failing target was tried');
  });

  it('counts a subscription with an event in flight as not due, so an idle worker sleeps instead of passing again', async () => {
    const s = await seedOrg(t.db);
    const r = await createSubscription(t.db, { organizationId: s.org.id, targetUrl: 'https://example.com/hook', eventTypes: ['incident.opened'], createdBy: null });
    assert.ok(r.ok);
    const event = { organizationId: s.org.id, type: 'incident.opened' as const, data: { object: {} } };
    await t.db.transaction((tx) => insertEvents(tx, [{ subscriptionId: r.subscription.id, event }, { subscriptionId: r.subscription.id, event }]));
    assert.ok((await nextEventDueAt(t.db))! <= Date.now() + 1000, 'due while nothing is in flight');
    const claimed = await claimEvents(t.db, { limit: 10, leaseMs: 60_000 });
    assert.equal(claimed.length, 1, 'one event per subscription at a time');
    assert.equal(await nextEventDueAt(t.db), null);
    assert.deepEqual(await claimEvents(t.db, { limit: 10, leaseMs: 60_000 }), []);
  });

  it('gives an event claimed again a new lease id, so the worker that gave it back cannot record over the next holder', async () => {
    const s = await seedOrg(t.db);
    const r = await createSubscription(t.db, { organizationId: s.org.id, targetUrl: 'https://example.com/hook', eventTypes: ['incident.opened'], createdBy: null });
    assert.ok(r.ok);
    const event = { organizationId: s.org.id, type: 'incident.opened' as const, data: { object: {} } };
    await t.db.transaction((tx) => insertEvents(tx, [{ subscriptionId: r.subscription.id, event }]));
    const [first] = await claimEvents(t.db, { limit: 10, leaseMs: 60_000 });
    assert.equal(await releaseEventLeases(t.db, [first.leaseId]), 1);
    const [second] = await claimEvents(t.db, { limit: 10, leaseMs: 60_000 });
    assert.equal(second.id, first.id);
    assert.notEqual(second.leaseId, first.leaseId);
    const outcome = { decision: { status: 'succeeded' as const }, statusCode: 200, error: null, gone: false };
    assert.equal(await completeEvent(t.db, first, outcome), false, 'the old lease records nothing');
    assert.equal(await completeEvent(t.db, second, outcome), true);
  });
});
