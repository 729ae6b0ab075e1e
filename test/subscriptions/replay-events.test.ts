import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { superviseReplayBatches } from '../../src/incidents/replay.ts';
import { call, seedOrg, useTestApp } from '../helpers/app.ts';
import { startTestWorker, waitUntil } from '../delivery/helpers.ts';
import { seedIncident } from '../incidents/helpers.ts';
import { bodyOf, subscribe, useEventFixtures, verifies } from './helpers.ts';

describe('replay.completed', () => {
  const t = useTestApp();
  const f = useEventFixtures();
  let forwards: DeliveryWorker | undefined;
  afterEach(async () => {
    await forwards?.stop(1000);
    forwards = undefined;
  });

  it('is sent when an incident replay batch finishes, with the batch as GET /v1/replay-batches/:id shows it', async () => {
    const s = await seedOrg(t.db, { plan: 'starter' });
    const destination = await f.receiver();
    const target = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: target.url, event_types: ['replay.completed'] });
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 2, url: destination.url });
    const queued = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 6000 } });
    assert.equal(queued.status, 200, JSON.stringify(queued.json));
    const batchId = queued.json.data.replay_batch_id;
    forwards = await startTestWorker(t.db);
    await destination.waitFor(2);
    await waitUntil(async () => (await superviseReplayBatches(t.db)).finished.includes(batchId), 'the batch to finish');
    await f.worker(t.db);
    const [got] = await target.waitFor(1);
    assert.ok(verifies(sub.secret, got));
    const event = bodyOf(got);
    assert.equal(event.type, 'replay.completed');
    const batch = (await call(t.app, 'GET', `/v1/replay-batches/${batchId}`, { key: s.key })).json.data;
    assert.deepEqual(event.data.object, batch);
    assert.equal(batch.status, 'finished');
    assert.equal(batch.delivered_count, 2);
  });

  it('announces request.forward_failed again, once, for each replayed request that fails again (a new failure episode)', async () => {
    const s = await seedOrg(t.db, { plan: 'starter' });
    // a 400 is not retried: each replay delivery ends failed at its first attempt
    const destination = await f.receiver({ reply: () => ({ status: 400 }) });
    const target = await f.receiver();
    const sub = await subscribe(t.app, s.key, { target_url: target.url, event_types: ['request.forward_failed'] });
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 2, url: destination.url });
    const queued = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 6000 } });
    assert.equal(queued.status, 200, JSON.stringify(queued.json));
    const batchId = queued.json.data.replay_batch_id;
    forwards = await startTestWorker(t.db);
    await destination.waitFor(2);
    await waitUntil(async () => {
      const r = await superviseReplayBatches(t.db);
      return r.finished.includes(batchId) || r.paused.includes(batchId);
    }, 'the batch to end');
    // supervising again announces nothing twice
    await superviseReplayBatches(t.db);
    await f.worker(t.db);
    // the first episodes (the seeded failures, announced by the correlator) and the replays' episodes
    const got = await target.waitFor(4);
    assert.ok(got.every((r) => verifies(sub.secret, r)));
    const all = got.map(bodyOf);
    assert.ok(all.every((e) => e.type === 'request.forward_failed'));
    const { rows } = await t.db.query<{ id: string }>(`select id from deliveries where replay_batch_id = $1::uuid order by id`, [batchId]);
    const replays = new Set(rows.map((r) => r.id));
    const events = all.filter((e) => replays.has(e.data.object.delivery_id));
    assert.equal(events.length, 2, 'one event per replayed request that failed again');
    assert.equal(new Set(events.map((e) => e.data.object.delivery_id)).size, 2);
    assert.ok(events.every((e) => e.data.object.incident_id === incidentId && e.data.object.replay_status_code === 400));
    const { rows: count } = await t.db.query<{ n: number }>(`select count(*)::int as n from subscription_events where subscription_id = $1::uuid`, [sub.id]);
    assert.equal(count[0].n, 4);
  });
});
