import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { releaseLeases, requeueExpiredLeases } from '../../src/delivery/claim.ts';
import { CANCELLED_ERROR, CANCELLED_MARK, HELD_UNTIL } from '../../src/delivery/replay-batch.ts';
import { superviseReplayBatches } from '../../src/incidents/replay.ts';
import { call, seedOrg, useTestApp } from '../helpers/app.ts';
import { startReceiver, type Receiver } from '../helpers/https.ts';
import { startTestWorker, waitForStatus, waitUntil } from '../delivery/helpers.ts';
import { correlateAll } from '../../src/incidents/correlate.ts';
import { assertPacedSchedule, failureRows, recordPacedSlots, seedIncident, updates } from './helpers.ts';

describe('incident replay', () => {
  const t = useTestApp();
  let workers: DeliveryWorker[] = [];
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop(0)));
    workers = [];
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  const receiver = async (reply?: Parameters<typeof startReceiver>[0]) => {
    const r = await startReceiver(reply);
    receivers.push(r);
    return r;
  };
  const snapshot = async () => ({
    batches: (await t.db.query(`select * from replay_batches`)).rows,
    deliveries: (await t.db.query(`select id, status from deliveries order by id`)).rows,
    failures: (await t.db.query(`select id, replay_delivery_id from incident_failures order by id`)).rows,
    updates: (await t.db.query(`select id from incident_updates order by id`)).rows,
  });

  /** An incident of `n` real failures against a receiver (retries off), correlated. */
  async function failingIncident(n: number, reply: () => { status: number }) {
    const s = await seedOrg(t.db);
    const rx = await receiver({ reply });
    const { incidentId, endpoint, destinationId } = await seedIncident(t.db, s.org.id, { n, url: rx.url });
    return { s, rx, incidentId, endpoint, destinationId };
  }

  describe('happy paths', () => {
    it('re-sends each unreplayed failure to its destination, records replayed_at and replay_status_code, and finishes the batch', async () => {
      let status = 503;
      const { s, rx, incidentId } = await failingIncident(4, () => ({ status }));
      status = 200;
      const { status: code, json } = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 6000 } });
      assert.equal(code, 200);
      assert.deepEqual(Object.keys(json.data).sort(), ['queued_count', 'replay_batch_id', 'requests_per_minute']);
      assert.equal(json.data.queued_count, 4);
      assert.equal(json.data.requests_per_minute, 6000);
      workers.push(await startTestWorker(t.db));
      const got = await rx.waitFor(4);
      assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 4, 'each failed request once');
      await waitUntil(async () => (await failureRows(t.db)).every((f) => f.replay_status_code === 200), 'replay outcomes on the failures');
      assert.ok((await failureRows(t.db)).every((f) => f.replayed_at !== null));

      assert.deepEqual(await superviseReplayBatches(t.db), { finished: [json.data.replay_batch_id], paused: [] });
      const batch = await call(t.app, 'GET', `/v1/replay-batches/${json.data.replay_batch_id}`, { key: s.key });
      assert.equal(batch.json.data.status, 'finished');
      assert.equal(batch.json.data.delivered_count, 4);
      assert.equal(batch.json.data.remaining_count, 0);
      const bodies = (await updates(t.db, incidentId)).map((u) => u.body);
      assert.ok(bodies.some((b) => /^Replay queued by member .*: 4 failed requests at 6000\/min/.test(b)), bodies.join('\n'));
      assert.ok(bodies.some((b) => /^Replay finished: .* delivered 4 of 4; 0 failed/.test(b)));

      // nothing is left: a second replay is refused and changes nothing
      const before = await snapshot();
      const again = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 60 } });
      assert.equal(again.status, 400);
      assert.equal(again.json.error.code, 'bad_request');
      assert.match(again.json.error.message, /no unreplayed failures/);
      assert.deepEqual(await snapshot(), before);
    });

    it('spaces a batch at its rate across two workers, from the slots Weir scheduled', async () => {
      let status = 500;
      const { s, rx, incidentId } = await failingIncident(6, () => ({ status }));
      status = 200;
      const recorder = await recordPacedSlots(t.db);
      try {
        workers.push(await startTestWorker(t.db), await startTestWorker(t.db));
        const perMinute = 300; // one every 200 ms
        const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: perMinute } });
        assert.equal(r.status, 200);
        await rx.waitFor(6);
        await waitForStatus(t.db, ['succeeded'], 6);
        const batchId = r.json.data.replay_batch_id;
        const { rows } = await t.db.query<{ id: string; attempts: number }>(
          `select d.id, (select count(*)::int from delivery_attempts a where a.delivery_id = d.id) as attempts from deliveries d where d.replay_batch_id = $1::uuid`,
          [batchId],
        );
        assert.deepEqual(rows.map((x) => x.attempts), [1, 1, 1, 1, 1, 1], 'each sent once');
        // one slot each, at least 200 ms apart: what the pacer scheduled, whenever the requests happened to arrive
        const slots = assertPacedSchedule(await recorder.slots(batchId), rows.map((x) => x.id), perMinute);
        assert.equal(slots.length, 6);
      } finally {
        await recorder.stop();
      }
    });

    it('pauses by itself when the destination fails again, and resumes on request', async () => {
      let status = 500;
      const { s, rx, incidentId } = await failingIncident(8, () => ({ status }));
      workers.push(await startTestWorker(t.db));
      const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 120 } });
      const batchId = r.json.data.replay_batch_id;
      // still failing: the fifth failed replay attempt pauses the batch
      await rx.waitFor(5);
      await waitUntil(async () => (await superviseReplayBatches(t.db)).paused.includes(batchId) || undefined, 'the batch to pause');
      const paused = (await call(t.app, 'GET', `/v1/replay-batches/${batchId}`, { key: s.key })).json.data;
      assert.equal(paused.status, 'paused');
      assert.match(paused.paused_reason, /last 5 replayed requests failed/);
      assert.ok(paused.remaining_count > 0);
      assert.equal(paused.estimated_end_at, null);
      const held = await t.db.query<{ n: number }>(
        `select count(*)::int as n from deliveries where replay_batch_id = $1::uuid and status = 'pending' and next_attempt_at = $2`,
        [batchId, HELD_UNTIL],
      );
      assert.ok(held.rows[0].n > 0, 'waiting deliveries are held');
      assert.ok((await updates(t.db, incidentId)).some((u) => u.is_system && /^Replay paused/.test(u.body)));

      status = 200;
      const resumed = await call(t.app, 'POST', `/v1/replay-batches/${batchId}/resume`, { key: s.key });
      assert.equal(resumed.status, 200);
      assert.equal(resumed.json.data.status, 'running');
      // the failures recorded before the pause do not pause it again
      assert.deepEqual((await superviseReplayBatches(t.db)).paused, []);
      assert.equal((await call(t.app, 'GET', `/v1/replay-batches/${batchId}`, { key: s.key })).json.data.status, 'running');
      await rx.waitFor(8);
      await waitUntil(async () => (await superviseReplayBatches(t.db)).finished.includes(batchId) || undefined, 'the batch to finish');
      const done = (await call(t.app, 'GET', `/v1/replay-batches/${batchId}`, { key: s.key })).json.data;
      assert.equal(done.delivered_count + done.failed_count, 8);
      assert.ok(done.delivered_count >= 3);
    });

    it('pauses a running batch on request (held, nothing sent), names it as the incident\'s newest batch, and resumes it', async () => {
      const { s, rx, incidentId } = await failingIncident(3, () => ({ status: 200 }));
      workers.push(await startTestWorker(t.db));
      const none = await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key });
      assert.equal(none.json.data.latest_replay_batch_id, null);
      const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 1 } });
      const batchId = r.json.data.replay_batch_id;
      assert.equal((await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key })).json.data.latest_replay_batch_id, batchId);
      await rx.waitFor(1);
      await waitUntil(async () => (await call(t.app, 'GET', `/v1/replay-batches/${batchId}`, { key: s.key })).json.data.delivered_count === 1 || undefined, 'the first replay to complete');
      const p = await call(t.app, 'POST', `/v1/replay-batches/${batchId}/pause`, { key: s.key });
      assert.equal(p.status, 200);
      assert.equal(p.json.data.status, 'paused');
      assert.match(p.json.data.paused_reason, /^paused by member /);
      assert.equal(p.json.data.remaining_count, 2);
      const held = await t.db.query<{ n: number }>(
        `select count(*)::int as n from deliveries where replay_batch_id = $1::uuid and status = 'pending' and next_attempt_at = $2`,
        [batchId, HELD_UNTIL],
      );
      assert.equal(held.rows[0].n, 2);
      assert.ok((await updates(t.db, incidentId)).some((u) => u.is_system && /paused by member .*: 2 requests held/.test(u.body)));
      const again = await call(t.app, 'POST', `/v1/replay-batches/${batchId}/pause`, { key: s.key });
      assert.equal(again.status, 409);
      assert.equal(again.json.error.code, 'conflict');
      // read before resuming: a resumed batch is paced again from now on, so
      // its next request leaves at once and may arrive before resume answers
      assert.equal(rx.received.length, 1, 'nothing was sent while paused');
      const resumed = await call(t.app, 'POST', `/v1/replay-batches/${batchId}/resume`, { key: s.key });
      assert.equal(resumed.json.data.status, 'running');
      await rx.waitFor(2);
      assert.equal(rx.received.length, 2, 'the next request at once, the one after it a minute later');
    });

    it('cancels a batch: unsent requests are not sent and count as unreplayed again', async () => {
      const { s, rx, incidentId } = await failingIncident(3, () => ({ status: 200 }));
      workers.push(await startTestWorker(t.db));
      const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 1 } });
      const batchId = r.json.data.replay_batch_id;
      await rx.waitFor(1);
      const c = await call(t.app, 'POST', `/v1/replay-batches/${batchId}/cancel`, { key: s.key });
      assert.equal(c.status, 200);
      assert.equal(c.json.data.status, 'cancelled');
      assert.equal(c.json.data.remaining_count, 0);
      const f = await failureRows(t.db);
      assert.equal(f.filter((x) => x.replay_delivery_id === null).length, 2, 'two failures are unreplayed again');
      const again = await call(t.app, 'POST', `/v1/replay-batches/${batchId}/cancel`, { key: s.key });
      assert.equal(again.status, 409);
      assert.equal(again.json.error.code, 'conflict');
      assert.equal(rx.received.length, 1);
    });
  });

  describe('a delivery in flight when its batch is paused or cancelled', () => {
    /**
     * Two failures replayed to a receiver that holds each request until
     * `answer` is opened and then says 503, with retries on (1 s): the
     * batch is paused or cancelled while both are in flight.
     */
    async function inFlightBatch() {
      let open!: () => void;
      const answer = new Promise<void>((r) => (open = r));
      let status = 503;
      const { s, rx, incidentId, destinationId } = await failingIncident(2, () => ({ status, until: answer }) as { status: number });
      await t.db.query(`update forward_destinations set retry_enabled = true, retry_schedule = '{1}' where id = $1::uuid`, [destinationId]);
      workers.push(await startTestWorker(t.db));
      const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 6000 } });
      const batchId: string = r.json.data.replay_batch_id;
      await rx.waitFor(2);
      const rows = () =>
        t.db.query<{ status: string; next_attempt_at: Date; last_error: string | null; attempt_count: number }>(
          `select status, next_attempt_at, last_error, attempt_count from deliveries where replay_batch_id = $1::uuid order by id`,
          [batchId],
        );
      assert.deepEqual((await rows()).rows.map((d) => d.status), ['in_flight', 'in_flight']);
      return { s, rx, batchId, rows, open, answerWith: (code: number) => (status = code) };
    }

    it('pause: the attempt finishes, and the retry it needs is held, not sent, until resume', async () => {
      const b = await inFlightBatch();
      assert.equal((await call(t.app, 'POST', `/v1/replay-batches/${b.batchId}/pause`, { key: b.s.key })).status, 200);
      b.open(); // both attempts now fail with 503, retryable in 1 s
      const held = await waitUntil(async () => {
        const { rows } = await b.rows();
        return rows.every((d) => d.attempt_count === 1 && d.status !== 'in_flight') ? rows : undefined;
      }, 'both attempts to be recorded');
      for (const d of held) {
        assert.equal(d.status, 'pending');
        assert.equal(d.next_attempt_at.toISOString(), new Date(HELD_UNTIL).toISOString(), 'the retry waits for resume, not for its 1 s');
      }
      b.answerWith(200);
      assert.equal((await call(t.app, 'POST', `/v1/replay-batches/${b.batchId}/resume`, { key: b.s.key })).json.data.status, 'running');
      await b.rx.waitFor(4);
      await waitUntil(async () => ((await b.rows()).rows.every((d) => d.status === 'succeeded') ? true : undefined), 'the resumed retries to succeed');
    });

    it('cancel: the attempt finishes, and a delivery that would retry ends failed instead', async () => {
      const b = await inFlightBatch();
      const c = await call(t.app, 'POST', `/v1/replay-batches/${b.batchId}/cancel`, { key: b.s.key });
      assert.equal(c.status, 200);
      b.open();
      const ended = await waitUntil(async () => {
        const { rows } = await b.rows();
        return rows.every((d) => d.attempt_count === 1 && d.status !== 'in_flight') ? rows : undefined;
      }, 'both attempts to be recorded');
      assert.deepEqual(ended.map((d) => [d.status, d.last_error]), [['failed', CANCELLED_ERROR], ['failed', CANCELLED_ERROR]]);
      assert.equal(b.rx.received.length, 2, 'no retry was sent');
    });
  });

  describe('a paused or cancelled batch\'s delivery whose lease ends without an outcome', () => {
    it('stays held, or ends failed, whether its lease expired or its worker gave it back', async () => {
      const s = await seedOrg(t.db);
      const { destinationId } = await seedIncident(t.db, s.org.id, { n: 4 });
      const { rows } = await t.db.query<{ id: string }>(`select id from deliveries where forward_destination_id = $1::uuid order by id`, [destinationId]);
      const lease = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
      const marks = [HELD_UNTIL, CANCELLED_MARK, HELD_UNTIL, CANCELLED_MARK];
      for (const [k, d] of rows.entries()) {
        // the first two: their lease ran out; the last two: their worker gives them back (shutdown)
        await t.db.query(
          `update deliveries set status = 'in_flight', next_attempt_at = $2, lease_id = $3::uuid,
                  lease_until = case when $4 then now() - interval '1 minute' else now() + interval '1 hour' end where id = $1::uuid`,
          [d.id, marks[k], k < 2 ? null : lease[k - 2], k < 2],
        );
      }
      assert.equal(await requeueExpiredLeases(t.db), 2);
      assert.equal(await releaseLeases(t.db, lease), 2);
      const after = await t.db.query<{ status: string; next_attempt_at: Date; last_error: string | null }>(
        `select status, next_attempt_at, last_error from deliveries where forward_destination_id = $1::uuid order by id`,
        [destinationId],
      );
      for (const [k, d] of after.rows.entries()) {
        if (marks[k] === HELD_UNTIL) {
          assert.equal(d.status, 'pending', `delivery ${k}`);
          assert.equal(d.next_attempt_at.toISOString(), new Date(HELD_UNTIL).toISOString(), `delivery ${k} stays held`);
        } else {
          assert.deepEqual([d.status, d.last_error], ['failed', CANCELLED_ERROR], `delivery ${k}`);
        }
      }
    });
  });

  describe('errors: each answers the envelope and changes nothing', () => {
    it('refuses a missing or invalid requests_per_minute with 400 bad_request', async () => {
      const s = await seedOrg(t.db);
      const { incidentId } = await seedIncident(t.db, s.org.id);
      const before = await snapshot();
      for (const body of [{}, { requests_per_minute: 0 }, { requests_per_minute: 6001 }, { requests_per_minute: -5 }, { requests_per_minute: 1.5 },
        { requests_per_minute: '60' }, { requests_per_minute: null }, { requests_per_minute: 60, extra: 1 }, undefined]) {
        const { status, json } = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body });
        assert.equal(status, 400, JSON.stringify(body));
        assert.equal(json.error.code, 'bad_request');
      }
      assert.deepEqual(await snapshot(), before);
    });

    it('answers 403 plan_limit on the free plan', async () => {
      const s = await seedOrg(t.db, { plan: 'free' });
      const { incidentId } = await seedIncident(t.db, s.org.id);
      const before = await snapshot();
      const { status, json } = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 60 } });
      assert.equal(status, 403);
      assert.equal(json.error.code, 'plan_limit');
      assert.deepEqual(await snapshot(), before);
    });

    it('refuses a batch that would take longer than 12 hours, asking for a higher rate or a subset', async () => {
      const s = await seedOrg(t.db);
      const { incidentId } = await seedIncident(t.db, s.org.id, { n: 721 });
      const before = await snapshot();
      const { status, json } = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 1 } });
      assert.equal(status, 400);
      assert.equal(json.error.code, 'bad_request');
      assert.match(json.error.message, /longer than the 12 hour limit: choose at least 2 requests per minute, or replay a subset/);
      assert.deepEqual(await snapshot(), before);
      // exactly 12 hours is allowed
      const ok = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 2 } });
      assert.equal(ok.status, 200);
      assert.equal(ok.json.data.queued_count, 721);
    });

    it("answers 404 for another organization's replay batch", async () => {
      const s = await seedOrg(t.db);
      const other = await seedOrg(t.db);
      const { incidentId } = await seedIncident(t.db, other.org.id);
      const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: other.key, body: { requests_per_minute: 60 } });
      for (const [method, path] of [['GET', ''], ['POST', '/cancel'], ['POST', '/pause'], ['POST', '/resume']] as const) {
        const { status, json } = await call(t.app, method, `/v1/replay-batches/${r.json.data.replay_batch_id}${path}`, { key: s.key });
        assert.equal(status, 404);
        assert.equal(json.error.code, 'not_found');
      }
    });
  });

  it('correlates a replayed request that fails again onto its failure, not as a new one', async () => {
    const { s, rx, incidentId } = await failingIncident(2, () => ({ status: 500 }));
    workers.push(await startTestWorker(t.db));
    await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: s.key, body: { requests_per_minute: 6000 } });
    await rx.waitFor(2);
    await waitUntil(async () => (await failureRows(t.db)).every((f) => f.replay_status_code === 500), 'replay outcomes');
    await correlateAll(t.db);
    assert.equal((await failureRows(t.db)).length, 2);
    const detail = await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key });
    assert.equal(detail.json.data.failure_count, 2);
  });
});
