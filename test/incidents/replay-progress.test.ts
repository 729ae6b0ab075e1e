import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';
import { claimDeliveries, releaseLeases, releaseOrphanedLeases } from '../../src/delivery/claim.ts';
import { completeAttempts, finishUnattempted, type Outcome } from '../../src/delivery/complete.ts';
import { batchCounts, foldProgress, PAUSE_AFTER_FAILURES, type BatchCounts } from '../../src/delivery/replay-batch.ts';
import type { ClaimedDelivery } from '../../src/delivery/transport.ts';
import { cancelReplayBatch, pauseReplayBatch, queueIncidentReplay, resumeReplayBatch, superviseReplayBatches } from '../../src/incidents/replay.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { onPostgres } from '../helpers/db.ts';
import { orgWithEndpoint, useWorkerTest, waitUntil } from '../delivery/helpers.ts';
import { seedIncident, updates } from './helpers.ts';

/**
 * The replay supervisor reads each batch's progress row, kept by the
 * changes themselves (a trigger appends one row per change, the supervisor
 * folds them: src/delivery/replay-batch.ts foldProgress), never the
 * batch's deliveries. These tests compare that count with a count of the
 * deliveries after every kind of change a batch's delivery goes through,
 * before and after each fold, so a change the count missed shows at once.
 * They drive the real claim, completion and lifecycle statements with
 * outcomes the test chooses, so nothing depends on timing.
 */
describe('replay batch progress: counted from what changed, exact', () => {
  const t = useWorkerTest();
  const claim = (limit = 10) => claimDeliveries(t.db, { destinationType: 'https', limit, leaseMs: 60_000, node: 'test', pacedBatches: true });
  const memberId = newId();

  async function queueBatch(n: number): Promise<{ batchId: string; organizationId: string; incidentId: string }> {
    const ep = await orgWithEndpoint(t.db);
    const { incidentId } = await seedIncident(t.db, ep.organization_id, { n });
    const r = await queueIncidentReplay(t.db, { organizationId: ep.organization_id, incidentId, requestsPerMinute: 6000, memberId, plan: { name: 'business', incidentReplay: true } });
    assert.ok(r.ok);
    return { batchId: r.replayBatchId, organizationId: ep.organization_id, incidentId };
  }

  const outcome = (d: ClaimedDelivery, decision: Outcome['decision'], statusCode: number, startedAt = new Date()): Outcome => ({
    delivery: d,
    result: { startedAt, durationMs: 1, url: d.url, statusCode, ...(statusCode >= 300 ? { errorClass: 'http_status' as const, errorMessage: `HTTP ${statusCode}` } : {}) },
    decision,
  });
  const ok = (d: ClaimedDelivery) => outcome(d, { status: 'succeeded' }, 200);
  const fails = (d: ClaimedDelivery) => outcome(d, { status: 'failed', reason: 'HTTP 500; retries are disabled' }, 500);
  const retries = (d: ClaimedDelivery, startedAt?: Date) => outcome(d, { status: 'pending', delaySeconds: 3600 }, 500, startedAt);
  const dies = (d: ClaimedDelivery) => outcome(d, { status: 'dead', reason: 'retries ran out' }, 500);

  /** The batch's deliveries, counted the slow way. */
  async function truth(db: Db, batchId: string): Promise<BatchCounts> {
    const { rows } = await db.query<BatchCounts>(
      `select count(*) filter (where status in ('pending', 'in_flight'))::int as waiting,
              count(*) filter (where status = 'succeeded')::int as succeeded,
              count(*) filter (where status in ('failed', 'dead'))::int as failed
         from deliveries where replay_batch_id = $1::uuid`,
      [batchId],
    );
    return rows[0];
  }

  /** The count equals the truth with changes still unfolded, and again once folded. */
  async function assertExact(batchId: string, step: string): Promise<BatchCounts> {
    const expected = await truth(t.db, batchId);
    assert.deepEqual((await batchCounts(t.db, [batchId])).get(batchId), expected, `${step}: before the fold`);
    await foldProgress(t.db);
    assert.deepEqual((await batchCounts(t.db, [batchId])).get(batchId), expected, `${step}: after the fold`);
    const { rows } = await t.db.query<{ n: number }>(`select count(*)::int as n from replay_batch_changes`);
    assert.equal(rows[0].n, 0, `${step}: every change folded`);
    return expected;
  }

  it('stays exact through claims, every outcome, pause, resume, a node killed mid-change and mid-attempt, cancel and deletion', async () => {
    const { batchId, organizationId } = await queueBatch(16);
    assert.deepEqual(await assertExact(batchId, 'queued'), { waiting: 16, succeeded: 0, failed: 0 });

    let c = (await claim(6)).claimed;
    assert.equal(c.length, 6);
    await assertExact(batchId, 'claimed');
    await completeAttempts(t.db, [ok(c[0]), ok(c[1]), fails(c[2]), retries(c[3]), dies(c[4])], 'test');
    assert.deepEqual(await assertExact(batchId, 'every outcome'), { waiting: 12, succeeded: 2, failed: 2 });
    assert.ok(await finishUnattempted(t.db, c[5], 'its capture is gone'));
    await assertExact(batchId, 'ended unattempted');

    // a node killed in the middle of a change: its transaction never commits, and neither does the count's row
    await assert.rejects(
      t.db.transaction(async (tx) => {
        await tx.query(`update deliveries set status = 'succeeded' where replay_batch_id = $1::uuid and status = 'pending'`, [batchId]);
        throw new Error('killed');
      }),
      /killed/,
    );
    await assertExact(batchId, 'a change rolled back');

    c = (await claim(3)).claimed;
    assert.ok((await pauseReplayBatch(t.db, organizationId, batchId, memberId)).ok);
    await assertExact(batchId, 'paused with deliveries in flight');
    await completeAttempts(t.db, [retries(c[0]), ok(c[1])], 'test');
    await assertExact(batchId, 'in-flight attempts finished during the pause');
    assert.ok((await resumeReplayBatch(t.db, organizationId, batchId, memberId)).ok);
    await assertExact(batchId, 'resumed');

    // a node killed while its attempts were in flight: at start its leases are given back, the deliveries wait again
    await releaseOrphanedLeases(t.db);
    await assertExact(batchId, 'leases of a killed node released');
    const stillOut = (await claim(4)).claimed;
    await releaseLeases(t.db, [stillOut.shift()!.leaseId]);
    await assertExact(batchId, 'a lease given back');

    // two nodes folding at once: each change is folded once
    c = (await claim(2)).claimed;
    await completeAttempts(t.db, [ok(c[0])], 'test');
    await Promise.all([foldProgress(t.db), foldProgress(t.db), completeAttempts(t.db, [fails(c[1])], 'test'), foldProgress(t.db)]);
    await assertExact(batchId, 'folds racing each other and a completion');

    assert.ok((await cancelReplayBatch(t.db, organizationId, batchId, memberId)).ok);
    await assertExact(batchId, 'cancelled with deliveries in flight');
    await completeAttempts(t.db, stillOut.map((d) => retries(d)), 'test');
    const end = await assertExact(batchId, 'the in-flight attempts of a cancelled batch ended');
    assert.equal(end.waiting, 0);

    await t.db.query(`delete from deliveries where id = (select id from deliveries where replay_batch_id = $1::uuid and status = 'succeeded' limit 1)`, [batchId]);
    await assertExact(batchId, 'a delivery deleted with its destination');
  });

  it('finishes a batch from its counts, with the counts in the incident update and the API', async () => {
    const { batchId, incidentId, organizationId } = await queueBatch(5);
    const c = (await claim()).claimed;
    await completeAttempts(t.db, [ok(c[0]), ok(c[1]), ok(c[2]), fails(c[3])], 'test');
    assert.deepEqual(await superviseReplayBatches(t.db), { finished: [], paused: [] }, 'one is still in flight');
    await completeAttempts(t.db, [dies(c[4])], 'test');
    assert.deepEqual(await superviseReplayBatches(t.db), { finished: [batchId], paused: [] });
    assert.ok((await updates(t.db, incidentId)).some((u) => u.body === `Replay finished: batch ${batchId} delivered 3 of 5; 2 failed.`));
    assert.deepEqual((await batchCounts(t.db, [batchId])).get(batchId), await truth(t.db, batchId));
    const { rows } = await t.db.query(`select 1 from replay_batch_pacing where replay_batch_id = $1::uuid`, [batchId]);
    assert.equal(rows.length, 0, 'nothing left to pace');
    assert.equal((await pauseReplayBatch(t.db, organizationId, batchId, memberId)).ok, false, 'a finished batch cannot be paused');
  });

  for (const folded of [true, false]) {
    it(`a resume is not paused again by failures recorded before the pause (${folded ? 'folded' : 'not yet folded'} when it paused)`, async () => {
      const { batchId, organizationId } = await queueBatch(12);
      const c = (await claim(PAUSE_AFTER_FAILURES + 1)).claimed;
      // one attempt starts before the pause and ends (failing) after the resume
      const slow = c.pop()!;
      const slowStarted = new Date();
      await completeAttempts(t.db, c.map((d) => retries(d)), 'test');
      if (folded) await foldProgress(t.db);
      assert.ok((await pauseReplayBatch(t.db, organizationId, batchId, memberId)).ok);
      assert.ok((await resumeReplayBatch(t.db, organizationId, batchId, memberId)).ok);
      await completeAttempts(t.db, [retries(slow, slowStarted)], 'test');
      assert.deepEqual(await superviseReplayBatches(t.db), { finished: [], paused: [] }, `${PAUSE_AFTER_FAILURES + 1} failures from before the pause`);

      // failures after the resume do count: PAUSE_AFTER_FAILURES of them pause it again, a success in between starts the run again
      const after = (await claim(PAUSE_AFTER_FAILURES + 1)).claimed;
      assert.equal(after.length, PAUSE_AFTER_FAILURES + 1);
      await completeAttempts(t.db, after.slice(0, 2).map((d) => retries(d)), 'test');
      await completeAttempts(t.db, [ok(after[2])], 'test');
      assert.deepEqual(await superviseReplayBatches(t.db), { finished: [], paused: [] });
      await completeAttempts(t.db, after.slice(3).map((d) => retries(d)), 'test');
      assert.deepEqual(await superviseReplayBatches(t.db), { finished: [], paused: [] }, `${after.length - 3} failures since the last success`);
      const more = (await claim(PAUSE_AFTER_FAILURES - (after.length - 3))).claimed;
      await completeAttempts(t.db, more.map((d) => retries(d)), 'test');
      assert.deepEqual(await superviseReplayBatches(t.db), { finished: [], paused: [batchId] }, `${PAUSE_AFTER_FAILURES} failures in a row since the resume`);
    });
  }

  it('costs the changes, not the batch: a tick never reads a delivery', { skip: onPostgres ? false : 'needs a second connection to hold the lock' }, async () => {
    const { batchId } = await queueBatch(20);
    const c = (await claim(3)).claimed;
    await completeAttempts(t.db, [ok(c[0]), fails(c[1])], 'test');
    // another connection holds every lock on deliveries: a tick that read one would wait for it
    const other = await openPostgres(t.testDb.url!, { poolSize: 2 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = other.transaction(async (tx) => {
      await tx.query('lock table deliveries in access exclusive mode');
      locked();
      await held;
    });
    try {
      await isLocked;
      const blocked = () =>
        t.db.query(`select 1 from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'deliveries' and not l.granted`).then((r) => r.rows.length > 0 || undefined);
      const first = await Promise.race([
        (async () => {
          for (let i = 0; i < 3; i++) await superviseReplayBatches(t.db);
          return 'ticked';
        })(),
        waitUntil(blocked, 'a tick waiting for deliveries').then(() => 'blocked'),
      ]);
      assert.equal(first, 'ticked', 'three ticks, with two changes to fold, touched no delivery');
    } finally {
      release();
      await holder;
      await other.close();
    }
    assert.deepEqual((await batchCounts(t.db, [batchId])).get(batchId), { waiting: 18, succeeded: 1, failed: 1 });
  });
});
