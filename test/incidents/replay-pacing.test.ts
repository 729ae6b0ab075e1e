import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { claimDeliveries, type ClaimOptions } from '../../src/delivery/claim.ts';
import { completeAttempts, type Outcome } from '../../src/delivery/complete.ts';
import { replayRequest } from '../../src/delivery/replay.ts';
import { endIdleBatchPacing, holdBatch, releaseBatch } from '../../src/delivery/replay-batch.ts';
import type { ClaimedDelivery } from '../../src/delivery/transport.ts';
import { queueIncidentReplay } from '../../src/incidents/replay.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';
import { orgWithEndpoint, useWorkerTest } from '../delivery/helpers.ts';
import { failureRows, seedIncident } from './helpers.ts';

/**
 * Claims skip replay batch pacing while no batch is paced (claim.ts): a
 * worker whose last claim saw no batch runs the statement without it,
 * which must claim nothing once a batch exists. These tests drive the
 * claim and completion statements directly, so what they check is what
 * the statements wrote, not timing.
 */
describe('replay batch pacing and the cheaper claim', () => {
  const t = useWorkerTest();
  const claim = (db: Db, o: Partial<ClaimOptions> = {}) => claimDeliveries(db, { destinationType: 'https', limit: 10, leaseMs: 60_000, node: 'test', ...o });
  const pacingRows = async () => (await t.db.query<{ n: number }>('select count(*)::int as n from replay_batch_pacing')).rows[0].n;
  const outcome = (d: ClaimedDelivery, decision: Outcome['decision'], statusCode: number): Outcome => ({
    delivery: d,
    result: { startedAt: new Date(), durationMs: 1, url: d.url, statusCode, ...(statusCode >= 300 ? { errorClass: 'http_status' as const, errorMessage: `HTTP ${statusCode}` } : {}) },
    decision,
  });

  /** incident_failures rows of these outcomes' (request, destination) pairs. */
  async function failuresOf(...of: Outcome[]): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>(
      `select count(*)::int as n from incident_failures f join unnest($1::uuid[]) as x(id) on f.delivery_id = x.id`,
      [of.map((o) => o.delivery.id)],
    );
    return rows[0].n;
  }

  /** A correlated incident of `n` failures and its paced replay at `perMinute`, queued; returns the batch id. */
  async function queueBatch(n: number, perMinute: number): Promise<string> {
    const ep = await orgWithEndpoint(t.db);
    const { incidentId } = await seedIncident(t.db, ep.organization_id, { n });
    const r = await queueIncidentReplay(t.db, { organizationId: ep.organization_id, incidentId, requestsPerMinute: perMinute, memberId: newId(), plan: { name: 'business', incidentReplay: true } });
    assert.ok(r.ok);
    return r.replayBatchId;
  }

  /** The batch's deliveries' slots in ms since the epoch, in order; null for a delivery claimed without one. */
  async function slots(batchId: string): Promise<Array<number | null>> {
    const { rows } = await t.db.query<{ ms: number | null }>(
      `select (extract(epoch from paced_slot) * 1000)::float8 as ms from deliveries where replay_batch_id = $1::uuid order by paced_slot nulls first, id`,
      [batchId],
    );
    return rows.map((r) => r.ms);
  }

  it('paces a batch queued after claims without batch pacing, on every worker that still believes there is none', async () => {
    // two "nodes": on PostgreSQL a second connection pool, on PGlite (one process by design) a second caller
    const other = t.testDb.url ? await openPostgres(t.testDb.url, { poolSize: 2 }) : t.db;
    try {
      const ep = await orgWithEndpoint(t.db, 'https://127.0.0.1:9/plain');
      await insertCaptures(t.db, ep, [{ body: '1' }, { body: '2' }]);
      const before = await claim(t.db, { node: 'a' });
      assert.equal(before.claimed.length, 2);
      assert.equal(before.pacedBatches, false, 'no batch: the cheaper statement claimed');

      const perMinute = 6; // one slot every 10 s: the horizon (1 s) lets only the first go now
      const batchId = await queueBatch(5, perMinute);
      // both workers still hold the hint of their last claim (no batch)
      const a = await claim(t.db, { node: 'a', limit: 2, pacedBatches: before.pacedBatches });
      const b = await claim(other, { node: 'b', limit: 10, pacedBatches: false });
      assert.equal(a.pacedBatches, true);
      assert.equal(b.pacedBatches, true);
      assert.equal(a.claimed.length + a.rescheduled + b.claimed.length + b.rescheduled, 5, 'every batch delivery was claimed once');
      assert.equal(a.claimed.length + b.claimed.length, 1, 'only the first slot is within the horizon');

      const got = await slots(batchId);
      assert.ok(got.every((s) => s !== null), `every delivery of the batch has a slot: ${got.join(', ')}`);
      const intervalMs = 60_000 / perMinute;
      for (let k = 1; k < got.length; k++) assert.ok(got[k]! - got[k - 1]! >= intervalMs - 1, `slot ${k} is ${got[k]! - got[k - 1]!} ms after slot ${k - 1}`);
      // the pacing row advanced past the last slot handed out, for whoever claims next
      const { rows } = await t.db.query<{ ahead: boolean }>(
        `select next_slot_at >= (select max(paced_slot) from deliveries where replay_batch_id = $1::uuid) as ahead from replay_batch_pacing where replay_batch_id = $1::uuid`,
        [batchId],
      );
      assert.deepEqual(rows, [{ ahead: true }]);
    } finally {
      if (other !== t.db) await other.close();
    }
  });

  it('keeps claiming with batch pacing while a batch has deliveries waiting, held or in flight, and drops it once nothing waits', async () => {
    const batchId = await queueBatch(2, 6000);
    const first = await claim(t.db, { limit: 1 });
    assert.equal(first.pacedBatches, true);
    assert.equal(first.claimed.length, 1);
    // one in flight, one pending: the row stays
    assert.equal(await endIdleBatchPacing(t.db), 0);
    // a paused batch's held deliveries still need their pacing when it resumes
    // (the one waiting, and the one in flight, whose retry would be held)
    assert.equal(await holdBatch(t.db, batchId), 2);
    assert.equal(await endIdleBatchPacing(t.db), 0);
    assert.equal(await releaseBatch(t.db, batchId), 2);
    const second = await claim(t.db, { pacedBatches: first.pacedBatches });
    assert.equal(second.claimed.length, 1);
    assert.equal(second.pacedBatches, true);
    // an attempt to be retried is waiting again: still paced
    await completeAttempts(t.db, [outcome(first.claimed[0], { status: 'pending', delaySeconds: 0 }, 503)], 'test');
    assert.equal(await endIdleBatchPacing(t.db), 0);
    const retry = await claim(t.db, { pacedBatches: second.pacedBatches });
    assert.equal(retry.claimed.length, 1);
    assert.notEqual(retry.claimed[0].sendAt, 0, 'the retry was given a slot');
    await completeAttempts(t.db, [retry.claimed[0], second.claimed[0]].map((d) => outcome(d, { status: 'succeeded' }, 200)), 'test');
    assert.equal(await endIdleBatchPacing(t.db), 1, 'nothing waits: the pacing row goes');
    assert.equal(await pacingRows(), 0);
    assert.equal(await endIdleBatchPacing(t.db), 0, 'dropping is idempotent');

    const ep = await orgWithEndpoint(t.db, 'https://127.0.0.1:9/plain');
    await insertCaptures(t.db, ep, [{ body: 'after' }]);
    const after = await claim(t.db, { pacedBatches: retry.pacedBatches });
    assert.equal(after.claimed.length, 1);
    assert.equal(after.pacedBatches, false, 'the next claim learns there is no batch any more');
  });

  it('learns of a batch from an empty claim too, and keeps an empty claim without batches cheap', async () => {
    const none = await claim(t.db);
    assert.deepEqual(none, { claimed: [], rescheduled: 0, pacedBatches: false });
    await queueBatch(1, 60);
    const next = await claim(t.db, { pacedBatches: false });
    assert.equal(next.claimed.length, 1);
    assert.equal(next.pacedBatches, true);
    const empty = await claim(t.db, { pacedBatches: true });
    assert.deepEqual(empty, { claimed: [], rescheduled: 0, pacedBatches: true }, 'the batch still has a delivery in flight');
  });

  it('records for incidents exactly the outcomes that concern them, in a group mixing every kind', async () => {
    // a capture's deliveries: one fails for good, one succeeds, one will be retried
    const ep = await insertEndpoint(t.db, (await orgWithEndpoint(t.db)).organization_id);
    const [failing, fine, flaky] = [
      await insertForwardDestination(t.db, ep, { url: 'https://127.0.0.1:9/failing', retryEnabled: false }),
      await insertForwardDestination(t.db, ep, { url: 'https://127.0.0.1:9/fine' }),
      await insertForwardDestination(t.db, ep, { url: 'https://127.0.0.1:9/flaky' }),
    ];
    await insertCaptures(t.db, ep, [{ body: 'x' }]);
    // an incident's replay (recovering its failure) and a single-request replay of another failure
    const batchId = await queueBatch(1, 6000);
    const seeded = await seedIncident(t.db, ep.organization_id, { n: 1 });
    const single = await replayRequest(t.db, { organizationId: ep.organization_id, requestId: seeded.requestIds[0], destinationId: seeded.destinationId });
    assert.ok(single.ok);

    const { claimed } = await claim(t.db);
    assert.equal(claimed.length, 5);
    const by = (f: (d: ClaimedDelivery) => boolean) => claimed.find(f)!;
    const failed = outcome(by((d) => d.forwardDestinationId === failing.id), { status: 'failed', reason: 'HTTP 503; retries are disabled for this destination' }, 503);
    const succeeded = outcome(by((d) => d.forwardDestinationId === fine.id), { status: 'succeeded' }, 200);
    const retried = outcome(by((d) => d.forwardDestinationId === flaky.id), { status: 'pending', delaySeconds: 60 }, 503);
    const batchReplay = outcome(by((d) => d.replayBatchId === batchId), { status: 'succeeded' }, 200);
    const singleReplay = outcome(by((d) => d.replayBatchId === single.replayBatchId), { status: 'succeeded' }, 201);
    // no final failure in this group, but a replay: its success must still recover its failure
    assert.equal((await completeAttempts(t.db, [succeeded, retried, singleReplay], 'test')).size, 3);
    const recovered = (await failureRows(t.db)).find((f) => f.request_id === seeded.requestIds[0])!;
    assert.ok(recovered.recovered_at, 'the single-request replay recovered its failure');
    assert.equal(await failuresOf(succeeded), 0, "a capture's first-attempt success records nothing");
    assert.equal(await failuresOf(retried), 1, 'a failed attempt that will be retried is recorded at once (issue 28)');
    assert.ok((await failureRows(t.db)).some((f: any) => f.delivery_id === retried.delivery.id && f.next_attempt_at), 'as retrying');

    assert.equal((await completeAttempts(t.db, [failed, batchReplay], 'test')).size, 2);
    const failures = await failureRows(t.db);
    assert.equal(await failuresOf(failed), 1, 'the final failure is recorded');
    const replayed = failures.find((f) => f.replay_delivery_id === batchReplay.delivery.id)!;
    assert.equal(replayed.replay_status_code, 200);
    assert.ok(replayed.replayed_at && replayed.recovered_at, 'the incident replay is recorded and its failure recovered');
    assert.equal(failures.length, 4);

    // a later group of capture outcomes: first-attempt successes change nothing for incidents, the failed attempt adds its row
    await insertCaptures(t.db, ep, [{ body: 'y' }]);
    const later = await claim(t.db);
    assert.equal(later.claimed.length, 3);
    const before = await failureRows(t.db);
    const plain = later.claimed.map((d, i) => (i === 0 ? outcome(d, { status: 'pending', delaySeconds: 60 }, 500) : outcome(d, { status: 'succeeded' }, 200)));
    assert.equal((await completeAttempts(t.db, plain, 'test')).size, 3);
    const afterRows = await failureRows(t.db);
    assert.deepEqual(afterRows.filter((f: any) => f.delivery_id !== later.claimed[0].id), before);
    assert.equal(afterRows.length, before.length + 1);
  });
});
