import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { seedOrg } from '../helpers/app.ts';
import { onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { http, startWeirProcess, type WeirProcess } from '../helpers/weir-process.ts';
import { waitUntil } from '../delivery/helpers.ts';
import { assertPacedSchedule, recordPacedSlots } from './helpers.ts';

/**
 * Two `weir serve` processes on one PostgreSQL: failures recorded by both
 * land on one incident with exact counts, and a replay at 120/min is paced
 * globally, measured at a real HTTPS receiver over a minute.
 */
describe('incidents on several Weir nodes', { skip: onPostgres ? false : 'needs PostgreSQL: several processes share one database' }, () => {
  let testDb: TestDb;
  let db: Db;
  let url: string;
  const nodes: WeirProcess[] = [];
  let rx: Receiver | undefined;

  before(async () => {
    testDb = await openTestDb();
    db = testDb.db;
    url = testDb.url!;
  });
  after(async () => {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    await rx?.close();
    await testDb.close();
  });

  it('correlate failures from both nodes into one incident, and replay it at 120/min (slots at least 500 ms apart, the whole run within 10 %) although both were claiming without batch pacing when it was queued', { timeout: 180_000 }, async (t) => {
    let status = 404;
    rx = await startReceiver({ reply: () => ({ status }) });
    const s = await seedOrg(db, { plan: 'starter' });
    // two endpoints forwarding to one URL: one incident (scope: the URL), two endpoints
    const a = await insertEndpoint(db, s.org.id, { forwardUrl: `${rx.url}/hook` });
    const b = await insertEndpoint(db, s.org.id, { forwardUrl: `${rx.url}/hook` });
    const env = { DATABASE_URL: url, WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile, WEIR_DELIVERY_CONCURRENCY: '4' };
    nodes.push(...(await Promise.all([startWeirProcess(env), startWeirProcess(env)])));

    const n = 121;
    await insertCaptures(db, a, Array.from({ length: 61 }, (_, i) => ({ body: `{"a":${i}}` })));
    await insertCaptures(db, b, Array.from({ length: n - 61 }, (_, i) => ({ body: `{"b":${i}}` })));
    const incident = await waitUntil(async () => {
      const r = await http(nodes[0].base, 'GET', '/v1/incidents', { token: s.key });
      const i = r.json?.data?.data?.[0];
      return i?.failure_count === n ? i : undefined;
    }, `one incident with ${n} failures`, 60_000);
    const { rows: byNode } = await db.query<{ node: string }>(`select distinct node from delivery_attempts`);
    assert.equal(byNode.length, 2, 'both nodes recorded failures');
    const all = await http(nodes[1].base, 'GET', '/v1/incidents?status=all', { token: s.key });
    assert.equal(all.json.data.meta.count, 1, 'one incident');
    assert.equal(incident.endpoint_count, 2);
    const { rows: recorded } = await db.query<{ n: number }>(`select count(*)::int as n from incident_failures`);
    assert.equal(recorded[0].n, n, 'each failure recorded once');

    status = 200;
    const recorder = await recordPacedSlots(db);
    const seen = rx.received.length;
    const replay = await http(nodes[1].base, 'POST', `/v1/incidents/${incident.id}/replay`, { token: s.key, body: { requests_per_minute: 120 } });
    assert.equal(replay.status, 200);
    assert.equal(replay.json.data.queued_count, n);
    await rx.waitFor(seen + n, 120_000);
    const batchId = replay.json.data.replay_batch_id;
    // the schedule both nodes shared: one slot per delivery, none closer than 500 ms to another (exact, whatever the arrivals' noise)
    const { rows: batchDeliveries } = await db.query<{ id: string }>(`select id from deliveries where replay_batch_id = $1::uuid`, [batchId]);
    const slots = assertPacedSchedule(await recorder.slots(batchId), batchDeliveries.map((d) => d.id), 120);
    await recorder.stop();
    const slotRate = ((slots.length - 1) * 60_000_000) / (slots.at(-1)! - slots[0]);
    // the whole run at the receiver: a pacer that sends more than 10 % too fast or 20 % too slow fails; noise would
    // have to move the first or last of 121 arrivals by seconds to break either bound
    const arrivals = rx.received.slice(seen).map((r) => r.at).sort((x, y) => x - y);
    const span = arrivals[arrivals.length - 1] - arrivals[0];
    const rate = ((arrivals.length - 1) * 60_000) / span;
    t.diagnostic(`replay rate: scheduled ${slotRate.toFixed(2)}/min, at the receiver ${rate.toFixed(2)}/min over ${(span / 1000).toFixed(1)} s (asked 120)`);
    assert.ok(slotRate <= 120 * (1 + 1e-9) && slotRate >= 120 * 0.8, `scheduled rate ${slotRate.toFixed(2)}/min`);
    assert.ok(rate <= 120 * 1.1 && rate >= 120 * 0.8, `replay rate ${rate.toFixed(2)}/min over ${(span / 1000).toFixed(1)} s`);
    const { rows: replayNodes } = await db.query<{ node: string }>(
      `select distinct a.node from delivery_attempts a join deliveries d on d.id = a.delivery_id where d.replay_batch_id = $1::uuid`,
      [batchId],
    );
    assert.equal(replayNodes.length, 2, 'both nodes sent part of the batch');
    const batch = await waitUntil(async () => {
      const r = await http(nodes[0].base, 'GET', `/v1/replay-batches/${replay.json.data.replay_batch_id}`, { token: s.key });
      return r.json.data.status === 'finished' ? r.json.data : undefined;
    }, 'the batch to finish');
    assert.equal(batch.delivered_count, n);
    // the nodes' supervisors drop the finished batch's pacing, so claims go back to the statement without it
    await waitUntil(async () => (await db.query<{ n: number }>('select count(*)::int as n from replay_batch_pacing')).rows[0].n === 0, 'the pacing row to go');
  });
});
