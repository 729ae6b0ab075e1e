import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { produceCaptureEvents } from '../../src/subscriptions/capture-events.ts';
import { claimEvents } from '../../src/subscriptions/queue.ts';
import { call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';
import { seedIncident } from '../incidents/helpers.ts';
import { bodyOf, produceUntil, settled, subscribe, useEventFixtures, verifies } from './helpers.ts';

describe('subscription events', () => {
  const t = useTestApp();
  const f = useEventFixtures();

  it('delivers a signed request.captured, carrying the capture as the API shows it, to a real HTTPS target', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const other = await insertEndpoint(t.db, s.org.id);
    const receiver = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.captured'], endpoint_id: endpoint.id });
    assert.match(sub.secret, /^whsec_/);
    const [c] = await insertCaptures(t.db, endpoint, [{ body: '{"hello":"world"}', path: '/stripe' }]);
    await insertCaptures(t.db, other, [{ body: 'not for this subscription' }]);
    await produceUntil(t.db, 1);
    await f.worker(t.db);
    const [got] = await receiver.waitFor(1);
    assert.ok(verifies(sub.secret, got), 'the reference library verifies the signature');
    const event = bodyOf(got);
    assert.equal(event.type, 'request.captured');
    assert.equal(got.headers['webhook-id'], event.id);
    const api = await call(t.app, 'GET', `/v1/requests/${c.id}`, { key: s.key });
    // the API's delivery summary is where forwarding stands now, not part of what was captured (docs/capture.md)
    const { delivery: _now, ...captured } = api.json.data;
    assert.deepEqual(event.data.object, captured);
    await settled(t.db, sub.id);
    // the producer has passed the other endpoint's capture: it is never announced to this subscription
    const { rows } = await t.db.query(`select status from subscription_events where subscription_id = $1::uuid`, [sub.id]);
    assert.deepEqual(rows, [{ status: 'succeeded' }]);
    const log = await call(t.app, 'GET', `/v1/subscriptions/${sub.id}/events`, { key: s.key });
    assert.equal(log.json.data.data[0].webhook_id, event.id);
    assert.equal(log.json.data.data[0].last_status_code, 200);
  });

  it('sends incident events in the order they happened, each with the incident as GET /v1/incidents/:id shows it', async () => {
    const s = await seedOrg(t.db);
    const receiver = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['incident.opened', 'incident.updated', 'incident.resolved'] });
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 3 });
    assert.equal((await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'investigating' } })).status, 200);
    assert.equal((await call(t.app, 'POST', `/v1/incidents/${incidentId}/updates`, { key: s.key, body: { body: 'Looking at the load balancer.' } })).status, 201);
    assert.equal((await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'resolved' } })).status, 200);
    await f.worker(t.db);
    const got = await receiver.waitFor(4);
    assert.ok(got.every((r) => verifies(sub.secret, r)));
    const events = got.map(bodyOf);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.change ?? null]),
      [['incident.opened', null], ['incident.updated', 'status'], ['incident.updated', 'note'], ['incident.resolved', null]],
    );
    assert.equal(events[0].data.object.failure_count, 3);
    assert.equal(events[0].data.object.status, 'open');
    assert.deepEqual(events[1].data.previous, { status: 'open' });
    assert.equal(events[1].data.object.status, 'investigating');
    assert.equal(events[2].data.update.body, 'Looking at the load balancer.');
    assert.equal(events[3].data.object.status, 'resolved');
    const detail = await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key });
    const { failures: _f, updates: _u, unreplayed_count: _n, latest_replay_batch_id: _b, ...incident } = detail.json.data;
    assert.deepEqual(events[3].data.object, incident);
  });

  it('announces each final forward failure once as request.forward_failed, with its incident', async () => {
    const s = await seedOrg(t.db);
    const receiver = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.forward_failed'] });
    const { incidentId, requestIds } = await seedIncident(t.db, s.org.id, { n: 3 });
    await f.worker(t.db);
    const got = (await receiver.waitFor(3)).map(bodyOf);
    assert.deepEqual(got.map((e) => e.data.object.request_id).sort(), [...requestIds].sort());
    assert.ok(got.every((e) => e.type === 'request.forward_failed' && e.data.object.incident_id === incidentId && e.data.object.status_code === 503));
    await settled(t.db, sub.id);
  });

  it('unsubscribes when the target answers 410 Gone, and announces nothing more', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const receiver = await f.receiver({ reply: () => ({ status: 410 }) });
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.captured'] });
    await insertCaptures(t.db, endpoint, [{ body: 'a' }, { body: 'b' }]);
    await produceUntil(t.db, 2);
    await f.worker(t.db);
    await receiver.waitFor(1);
    await settled(t.db, sub.id);
    const got = await call(t.app, 'GET', `/v1/subscriptions/${sub.id}`, { key: s.key });
    assert.equal(got.json.data.status, 'unsubscribed');
    assert.match(got.json.data.status_reason, /410/);
    // one attempt: the second event is dropped with the subscription, not sent
    assert.equal(receiver.received.length, 1);
    await insertCaptures(t.db, endpoint, [{ body: 'c' }]);
    // an unsubscribed subscription covers nothing: the capture statement wrote no announcement
    assert.deepEqual(await produceCaptureEvents(t.db), { taken: 0, queued: 0, busy: false });
  });

  it('signs with the old and the new secret during a rotation overlap, and with the new one alone after it', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const receiver = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.captured'] });
    const rotated = await call(t.app, 'POST', `/v1/subscriptions/${sub.id}/rotate-secret`, { key: s.key });
    assert.equal(rotated.status, 200);
    const fresh = rotated.json.data.secret as string;
    assert.notEqual(fresh, sub.secret);
    assert.ok(Date.parse(rotated.json.data.previous_secret_expires_at) > Date.now() + 23 * 3600_000);
    await insertCaptures(t.db, endpoint, [{ body: 'during' }]);
    await produceUntil(t.db, 1);
    const w = await f.worker(t.db);
    const [during] = await receiver.waitFor(1);
    assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2);
    assert.ok(verifies(sub.secret, during), 'the old secret verifies during the overlap');
    assert.ok(verifies(fresh, during), 'the new secret verifies during the overlap');
    await w.stop(1000);

    await t.db.query(`update subscriptions set previous_secret_expires_at = now() - interval '1 second' where id = $1::uuid`, [sub.id]);
    await insertCaptures(t.db, endpoint, [{ body: 'after' }]);
    await produceUntil(t.db, 2);
    await f.worker(t.db);
    const [, after] = await receiver.waitFor(2);
    assert.ok(verifies(fresh, after));
    assert.ok(!verifies(sub.secret, after), 'the old secret no longer verifies');
  });

  it('delivers an event whose worker died holding it: the lease runs out and another worker sends it', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const receiver = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.captured'] });
    await insertCaptures(t.db, endpoint, [{ body: 'survives' }]);
    await produceUntil(t.db, 1);
    // a worker claims it and dies before sending (its lease is 1 ms)
    const [claimed] = await claimEvents(t.db, { limit: 10, leaseMs: 1 });
    assert.ok(claimed);
    assert.equal(receiver.received.length, 0);
    await f.worker(t.db);
    const [got] = await receiver.waitFor(1);
    assert.ok(verifies(sub.secret, got));
    assert.equal(got.headers['webhook-id'], `evt_${claimed.id}`);
  });

  it('flags a subscription failing when its target refuses an event, and clears the flag on the next success', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const receiver = await f.receiver({ reply: (_r, i) => ({ status: i === 0 ? 400 : 200 }) });
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.captured'] });
    await insertCaptures(t.db, endpoint, [{ body: 'refused' }]);
    await produceUntil(t.db, 1);
    const w = await f.worker(t.db);
    await receiver.waitFor(1);
    await settled(t.db, sub.id);
    const failing = (await call(t.app, 'GET', `/v1/subscriptions/${sub.id}`, { key: s.key })).json.data;
    assert.equal(failing.status, 'failing');
    assert.match(failing.status_reason, /400/);
    assert.ok(failing.failing_since);
    await w.stop(1000);
    await insertCaptures(t.db, endpoint, [{ body: 'accepted' }]);
    await produceUntil(t.db, 2);
    await f.worker(t.db);
    await receiver.waitFor(2);
    await settled(t.db, sub.id);
    const healthy = (await call(t.app, 'GET', `/v1/subscriptions/${sub.id}`, { key: s.key })).json.data;
    assert.equal(healthy.status, 'active');
    assert.equal(healthy.consecutive_failures, 0);
  });

  it('never sends an event to a loopback target unless private addresses are allowed (the forwards\' SSRF guard)', async () => {
    const s = await seedOrg(t.db);
    const endpoint = await insertEndpoint(t.db, s.org.id);
    const receiver = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: receiver.url, event_types: ['request.captured'] });
    await insertCaptures(t.db, endpoint, [{ body: 'x' }]);
    await produceUntil(t.db, 1);
    await f.worker(t.db, { allowPrivate: false });
    await settled(t.db, sub.id);
    const { rows } = await t.db.query<{ status: string; last_error: string }>(`select status, last_error from subscription_events where subscription_id = $1::uuid`, [sub.id]);
    assert.equal(rows[0].status, 'failed');
    assert.match(rows[0].last_error, /127\.0\.0\.1|loopback|refused/i);
    assert.equal(receiver.received.length, 0);
  });
});
