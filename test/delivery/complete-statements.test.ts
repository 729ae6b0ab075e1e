import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { setStatements, type Queryable } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';
import { releaseLeases, requeueExpiredLeases } from '../../src/delivery/claim.ts';
import { COMPLETE_SETTINGS, CompletionBatcher, completeAttempts, completionParams, type Outcome } from '../../src/delivery/complete.ts';
import type { Db } from '../../src/db/db.ts';
import { COMPLETE_ATTEMPTS, COMPLETE_ATTEMPTS_RECORDING_INCIDENTS } from '../../src/delivery/complete-statement.ts';
import { CANCELLED_ERROR, CANCELLED_MARK, HELD_UNTIL } from '../../src/delivery/replay-batch.ts';
import type { Decision } from '../../src/delivery/retry-policy.ts';
import type { ClaimedDelivery } from '../../src/delivery/transport.ts';
import { outcomeConcernsIncidents } from '../../src/incidents/record.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { insertEndpoint, type EndpointFixture } from '../helpers/fixtures.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { genericPlanOf } from '../helpers/plans.ts';

// The completion statements (src/delivery/complete-statement.ts) and the
// batch-mark functions (migration 0021) every statement that takes a
// delivery out of flight reads.

const URL = 'https://example.com/hook';
let t: TestDb;
let ep: EndpointFixture;
before(async () => {
  t = await openTestDb();
});
after(() => t.close());
beforeEach(async () => {
  await t.reset();
  const org = await createOrganization(t.db, { name: 'Acme', plan: 'business', region: 'us' });
  ep = await insertEndpoint(t.db, org.id, { forwardUrl: URL });
});

const ROLLBACK = new Error('rollback');
async function rolledBack<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
  let out: T | undefined;
  await t.db
    .transaction(async (tx) => {
      out = await fn(tx);
      throw ROLLBACK;
    })
    .catch((err) => {
      if (err !== ROLLBACK) throw err;
    });
  return out as T;
}

interface Row {
  id?: string;
  requestId: string;
  status: string;
  attemptCount?: number;
  replayBatchId?: string | null;
  leaseId?: string | null;
  nextAttemptAt?: string;
}
async function insertDelivery(r: Row): Promise<string> {
  const id = r.id ?? newId();
  await t.db.query(
    `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, url, status, attempt_count,
                             replay_batch_id, lease_id, lease_until, next_attempt_at)
     values ($1::uuid, $2::uuid, $3::uuid, now(), $4::uuid, 'https', $5, $6, $7, $8::uuid, $9::uuid,
             case when $6 = 'in_flight' then now() + interval '1 hour' end, coalesce($10::timestamptz, now() - interval '1 second'))`,
    [id, ep.organization_id, r.requestId, ep.id, URL, r.status, r.attemptCount ?? 0, r.replayBatchId ?? null, r.leaseId ?? null, r.nextAttemptAt ?? null],
  );
  return id;
}

async function insertFailure(deliveryId: string, requestId: string, replayDeliveryId: string | null = null): Promise<void> {
  await t.db.query(
    `insert into incident_failures (id, organization_id, delivery_id, request_id, request_received_at, endpoint_id, destination_type, scope_key,
                                    destination_url, status_code, error_class, error, replay_delivery_id)
     values ($1::uuid, $2::uuid, $3::uuid, $4::uuid, now(), $5::uuid, 'https', $6, $7, 500, 'http_5xx', 'HTTP 500', $8::uuid)`,
    [newId(), ep.organization_id, deliveryId, requestId, ep.id, `url:${URL}`, URL, replayDeliveryId],
  );
}

function outcomeOf(d: { id: string; leaseId: string; requestId: string; replayBatchId: string | null; attemptNumber: number }, decision: Decision): Outcome {
  const delivery = {
    ...d,
    organizationId: ep.organization_id,
    endpointId: ep.id,
    forwardDestinationId: null,
    destinationType: 'https',
    url: URL,
    agentId: null,
    sendAt: 0,
    capture: null,
    enabled: true,
    methodOverride: null,
  } as unknown as ClaimedDelivery;
  const statusCode = { succeeded: 200, pending: 503, failed: 400, dead: 503 }[decision.status];
  return { delivery, decision, result: { startedAt: new Date(), durationMs: 12, url: URL, statusCode, errorClass: statusCode >= 300 ? 'http_status' : undefined } as Outcome['result'] };
}

const DECISIONS: Decision[] = [
  { status: 'succeeded' },
  { status: 'pending', delaySeconds: 5 },
  { status: 'failed', reason: 'not retryable' },
  { status: 'dead', reason: 'retries exhausted' },
];

/** What incidents and the queue hold: the part of the state the two statements could leave differently. */
async function state(tx: Queryable): Promise<string> {
  const f = await tx.query(`select * from incident_failures order by id`);
  const d = await tx.query(`select id, status, last_error, attempt_count, last_status_code from deliveries order by id`);
  return JSON.stringify([f.rows, d.rows]);
}

describe('the completion statements', () => {
  // Each kind of delivery as it really is when its attempt completes: a
  // capture's own on its first attempt (no failure recorded yet), the same
  // on a later attempt (its first failure recorded), and a single-request
  // replay (its original failed, with a retry still waiting).
  const KINDS = [
    { name: 'a capture\'s own delivery, first attempt', replay: false, attemptNumber: 1 },
    { name: 'a capture\'s own delivery, second attempt', replay: false, attemptNumber: 2 },
    { name: 'a replay\'s delivery', replay: true, attemptNumber: 1 },
  ];
  for (const kind of KINDS) {
    for (const decision of DECISIONS) {
      const concerns = outcomeConcernsIncidents(decision.status, kind.replay ? 'batch' : null, kind.attemptNumber);
      it(`${kind.name}, ${decision.status}: COMPLETE_ATTEMPTS_RECORDING_INCIDENTS ${concerns ? 'records more than' : 'changes nothing more than'} COMPLETE_ATTEMPTS, as outcomeConcernsIncidents says`, async () => {
        const requestId = newId();
        const replayBatchId = kind.replay ? newId() : null;
        let original: string | null = null;
        if (kind.replay) {
          original = await insertDelivery({ requestId, status: 'dead', attemptCount: 3 });
          await insertDelivery({ requestId, status: 'pending', attemptCount: 1 }); // a retry the replay's success supersedes
        }
        const leaseId = newId();
        const id = await insertDelivery({ requestId, status: 'in_flight', attemptCount: kind.attemptNumber - 1, replayBatchId, leaseId });
        if (kind.attemptNumber > 1) await insertFailure(id, requestId);
        if (original) await insertFailure(original, requestId, id);
        const outcome = outcomeOf({ id, leaseId, requestId, replayBatchId, attemptNumber: kind.attemptNumber }, decision);
        const run = (sql: string) =>
          rolledBack(async (tx) => {
            const { rows } = await tx.query<{ id: string }>(sql, completionParams([outcome], 'node'));
            assert.deepEqual(rows.map((r) => r.id), [id], 'the delivery moved on');
            return state(tx);
          });
        const plain = await run(COMPLETE_ATTEMPTS);
        const recording = await run(COMPLETE_ATTEMPTS_RECORDING_INCIDENTS);
        assert.equal(plain !== recording, concerns, `plain:     ${plain}\nrecording: ${recording}`);
      });
    }
  }

  it('completeAttempts runs one statement for a mixed group, recording the outcomes that concern incidents', async () => {
    const fast = { requestId: newId(), leaseId: newId() };
    const slow = { requestId: newId(), leaseId: newId() };
    const fastId = await insertDelivery({ requestId: fast.requestId, status: 'in_flight', leaseId: fast.leaseId });
    const slowId = await insertDelivery({ requestId: slow.requestId, status: 'in_flight', leaseId: slow.leaseId });
    const owned = await completeAttempts(
      t.db,
      [
        outcomeOf({ id: fastId, ...fast, replayBatchId: null, attemptNumber: 1 }, { status: 'succeeded' }),
        outcomeOf({ id: slowId, ...slow, replayBatchId: null, attemptNumber: 1 }, { status: 'failed', reason: 'no' }),
      ],
      'node',
    );
    assert.deepEqual([...owned].sort(), [fastId, slowId].sort());
    const { rows } = await t.db.query<{ delivery_id: string }>(`select delivery_id from incident_failures`);
    assert.deepEqual(rows.map((r) => r.delivery_id), [slowId]);
  });

  it('records every text as the attempt had it: quotes, backslashes, braces, commas, "NULL" and NUL, in one group with plain outcomes', async () => {
    const odd = { requestId: newId(), leaseId: newId() };
    const plain = { requestId: newId(), leaseId: newId() };
    const oddId = await insertDelivery({ requestId: odd.requestId, status: 'in_flight', leaseId: odd.leaseId });
    const plainId = await insertDelivery({ requestId: plain.requestId, status: 'in_flight', leaseId: plain.leaseId });
    const weird = 'a "quoted" {brace}, back\\slash \\" NULL é😀\nnext line';
    const o = outcomeOf({ id: oddId, ...odd, replayBatchId: null, attemptNumber: 1 }, { status: 'pending', delaySeconds: 0.25 });
    o.result = {
      ...o.result,
      url: 'https://example.com/a"b\\c?x={1,2}',
      statusCode: 503,
      errorClass: 'http_status',
      errorMessage: `${weird}\u0000end`,
      responseHeaders: [['x-odd', weird], ['x-empty', ''], ['x-null', 'NULL']],
      responseBody: Buffer.from([0, 1, 0x22, 0x5c, 0x7b, 0xff]),
      responseTruncated: true,
      transformationHash: 'sha256:"x"',
      sentRequest: { headers: [['a', weird]], body: '' } as never,
    };
    await completeAttempts(t.db, [o, outcomeOf({ id: plainId, ...plain, replayBatchId: null, attemptNumber: 1 }, { status: 'succeeded' })], 'node "one"');
    const { rows } = await t.db.query<Record<string, unknown>>(
      `select url, status_code, error_class, error_message, response_headers, response_body, response_body_truncated, node, transformation_hash, sent_request
         from delivery_attempts where delivery_id = $1::uuid`,
      [oddId],
    );
    assert.equal(rows.length, 1);
    const a = rows[0];
    assert.equal(a.url, 'https://example.com/a"b\\c?x={1,2}');
    assert.equal(a.status_code, 503);
    assert.equal(a.error_message, `${weird}\uFFFDend`);
    assert.deepEqual(a.response_headers, [['x-odd', weird], ['x-empty', ''], ['x-null', 'NULL']]);
    assert.deepEqual([...(a.response_body as Buffer)], [0, 1, 0x22, 0x5c, 0x7b, 0xff]);
    assert.equal(a.response_body_truncated, true);
    assert.equal(a.node, 'node "one"');
    assert.equal(a.transformation_hash, 'sha256:"x"');
    assert.deepEqual(a.sent_request, { headers: [['a', weird]], body: '' });
    const d = await t.db.query<{ status: string; last_error: string; next_attempt_at: Date }>(`select status, last_error, next_attempt_at from deliveries where id = $1::uuid`, [oddId]);
    assert.equal(d.rows[0].status, 'pending');
    assert.equal(d.rows[0].last_error, `${weird}\uFFFDend`);
    const succeeded = await t.db.query(`select 1 from delivery_attempts where delivery_id = $1::uuid and status_code = 200 and error_message is null`, [plainId]);
    assert.equal(succeeded.rows.length, 1);
  });

  describe('CompletionBatcher', () => {
    /** `n` leased deliveries and their succeeded outcomes. */
    async function outcomes(n: number): Promise<Outcome[]> {
      const out: Outcome[] = [];
      for (let i = 0; i < n; i++) {
        const d = { requestId: newId(), leaseId: newId() };
        const id = await insertDelivery({ requestId: d.requestId, status: 'in_flight', leaseId: d.leaseId });
        out.push(outcomeOf({ id, ...d, replayBatchId: null, attemptNumber: 1 }, { status: 'succeeded' }));
      }
      return out;
    }
    /** The test database, counting the completion statements run through it. */
    function counting(): { db: Db; writes: () => number } {
      let writes = 0;
      const db: Db = {
        ...t.db,
        withSettings: (settings, fn) => {
          if (settings === COMPLETE_SETTINGS) writes++;
          return t.db.withSettings(settings, fn);
        },
      };
      return { db, writes: () => writes };
    }
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it('with a linger, records outcomes that come one after another within it in one statement', async () => {
      const [a, b, c] = await outcomes(3);
      const { db, writes } = counting();
      const batcher = new CompletionBatcher(db, 'node', { minBatch: 10, ms: 300 });
      const recorded = [batcher.record(a)];
      await sleep(20);
      recorded.push(batcher.record(b));
      await sleep(20);
      recorded.push(batcher.record(c));
      assert.deepEqual(await Promise.all(recorded), [true, true, true]);
      assert.equal(writes(), 1);
      const { rows } = await t.db.query<{ n: number }>(`select count(*)::int as n from deliveries where status = 'succeeded'`);
      assert.equal(rows[0].n, 3);
    });

    it('without one, writes the first outcome at once', async () => {
      const [a, b] = await outcomes(2);
      const { db, writes } = counting();
      const batcher = new CompletionBatcher(db, 'node');
      const first = batcher.record(a);
      await sleep(50);
      const second = batcher.record(b);
      assert.deepEqual(await Promise.all([first, second]), [true, true]);
      assert.equal(writes(), 2);
    });

    // a minute's linger against a ten-second timeout: only a batch written at once passes
    it('with a linger, writes a batch that already holds minBatch outcomes without waiting', { timeout: 10_000 }, async () => {
      const five = await outcomes(5);
      const { db, writes } = counting();
      const batcher = new CompletionBatcher(db, 'node', { minBatch: 5, ms: 60_000 });
      assert.deepEqual(await Promise.all(five.map((o) => batcher.record(o))), [true, true, true, true, true]);
      assert.equal(writes(), 1);
    });
  });

  /** 2,000 finished deliveries, unanalyzed: history the completions must not read. */
  async function insertHistory(): Promise<void> {
    await t.db.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, url, status)
       select gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'https', $3, 'succeeded' from generate_series(1, 2000)`,
      [ep.organization_id, ep.id, URL],
    );
  }

  for (const [name, statement] of [
    ['COMPLETE_ATTEMPTS', COMPLETE_ATTEMPTS],
    ['COMPLETE_ATTEMPTS_RECORDING_INCIDENTS', COMPLETE_ATTEMPTS_RECORDING_INCIDENTS],
  ] as const) {
    it(`${name} finds each outcome's delivery by its primary key, not by reading every delivery (no statistics, as on PGlite)`, async () => {
      // 2,000 deliveries of history, unanalyzed: the size at which a plain join hashed
      // 16 outcomes and read the whole table for them (complete-statement.ts: the plain join of an earlier statement)
      await insertHistory();
      const outcomes: Outcome[] = [];
      for (let i = 0; i < 16; i++) {
        const d = { requestId: newId(), leaseId: newId(), replayBatchId: null, attemptNumber: 1 };
        outcomes.push(outcomeOf({ id: await insertDelivery({ ...d, status: 'in_flight' }), ...d }, { status: 'succeeded' }));
      }
      const plan = await rolledBack(async (tx) => {
        // as completeAttempts runs it
        await tx.exec(setStatements(COMPLETE_SETTINGS));
        const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off) ${statement}`, completionParams(outcomes, 'node'));
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
      assert.match(plan, /Index Scan using deliveries_pkey on deliveries/, plan);
      assert.doesNotMatch(plan, /Seq Scan on deliveries/, plan);
    });

    it(`${name}, prepared: its generic plan probes each delivery it reads or moves by primary key, whatever the table holds (COMPLETE_SETTINGS, LEASED)`, async () => {
      // an unanalyzed table with history; the assertions read the generic plan's shape (a plan that
      // walked deliveries_leased would read the dead entries of every delivery once in flight)
      await insertHistory();
      const plan = await genericPlanOf(t.db, statement, completionParams([], 'node').length, COMPLETE_SETTINGS);
      // the deliveries moved and those kept (ATTEMPTS): primary-key probes; the only other
      // read of deliveries is the supersede of a successful replay's pair (by request)
      const reads = plan.split('\n').filter((line) => / on deliveries\b/.test(line) && !/Update on/.test(line));
      assert.equal(reads.filter((line) => /Index Scan using deliveries_pkey on deliveries/.test(line)).length, 2, plan);
      for (const line of reads) assert.match(line, /Index Scan using deliveries_(pkey|request) on deliveries/, plan);
      assert.doesNotMatch(plan, /deliveries_leased|Seq Scan on deliveries|Bitmap/, plan);
    });
  }

  it('the status check no index matches (LEASED) reads as the plain one: a delivery has a status', async () => {
    const { rows } = await t.db.query<{ nullable: string }>(
      `select is_nullable as nullable from information_schema.columns where table_name = 'deliveries' and column_name = 'status'`,
    );
    assert.equal(rows[0].nullable, 'NO');
  });
});

describe('the batch marks: one rule, read by every statement that takes a delivery out of flight', () => {
  it('the functions of migration 0021 know the marks and the error replay-batch.ts writes', async () => {
    const { rows } = await t.db.query<Record<string, unknown>>(
      `select delivery_retry_status($1::timestamptz) as held_status, delivery_retry_status($2::timestamptz) as cancelled_status,
              delivery_retry_status(now()) as plain_status,
              delivery_retry_due($1::timestamptz, now()) = $1::timestamptz as held_stays, delivery_retry_due(now() - interval '1 hour', now()) = now() as plain_due,
              delivery_retry_error($2::timestamptz, 'x') as cancelled_error, delivery_retry_error($1::timestamptz, 'x') as held_error,
              delivery_retry_error(now(), 'x') as plain_error`,
      [HELD_UNTIL, CANCELLED_MARK],
    );
    assert.deepEqual(rows[0], {
      held_status: 'pending',
      cancelled_status: 'failed',
      plain_status: 'pending',
      held_stays: true,
      plain_due: true,
      cancelled_error: CANCELLED_ERROR,
      held_error: 'x',
      plain_error: 'x',
    });
  });

  it('are inlined into the statements that use them: no function call per row on the hot path', async () => {
    const { rows } = await t.db.query<{ 'QUERY PLAN': string }>(
      `explain verbose update deliveries set status = delivery_retry_status(next_attempt_at),
              next_attempt_at = delivery_retry_due(next_attempt_at, now()), last_error = delivery_retry_error(next_attempt_at, last_error)`,
    );
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.doesNotMatch(plan, /delivery_retry_/, plan);
    assert.match(plan, /CASE WHEN/, plan);
  });

  /** Three deliveries in flight: one unmarked, one of a paused batch, one of a cancelled batch. */
  async function inFlight(): Promise<Array<{ id: string; leaseId: string; requestId: string; mark: string | null }>> {
    const out = [];
    for (const mark of [null, HELD_UNTIL, CANCELLED_MARK]) {
      const requestId = newId();
      const leaseId = newId();
      const id = await insertDelivery({ requestId, status: 'in_flight', leaseId, replayBatchId: newId(), nextAttemptAt: mark ?? undefined });
      out.push({ id, leaseId, requestId, mark });
    }
    return out;
  }

  async function assertMarksRead(ds: Array<{ id: string; mark: string | null }>, unmarkedError: string | null) {
    const { rows } = await t.db.query<{ id: string; status: string; next_attempt_at: Date; last_error: string | null; held: boolean }>(
      `select id, status, next_attempt_at, last_error, next_attempt_at >= $1::timestamptz as held from deliveries where id = any($2::uuid[])`,
      [HELD_UNTIL, ds.map((d) => d.id)],
    );
    const by = new Map(rows.map((r) => [r.id, r]));
    const [plain, held, cancelled] = ds.map((d) => by.get(d.id)!);
    assert.deepEqual([plain.status, plain.held, plain.last_error], ['pending', false, unmarkedError], 'unmarked: due again');
    assert.deepEqual([held.status, held.next_attempt_at.toISOString()], ['pending', new Date(HELD_UNTIL).toISOString()], 'paused batch: stays held');
    assert.deepEqual([cancelled.status, cancelled.last_error], ['failed', CANCELLED_ERROR], 'cancelled batch: ends failed');
  }

  it('the completion of an attempt that needs another try', async () => {
    const ds = await inFlight();
    await completeAttempts(
      t.db,
      ds.map((d) => outcomeOf({ ...d, replayBatchId: newId(), attemptNumber: 1 }, { status: 'pending', delaySeconds: 5 })),
      'node',
    );
    await assertMarksRead(ds, 'http_status');
  });

  it('requeueExpiredLeases', async () => {
    const ds = await inFlight();
    await t.db.query(`update deliveries set lease_until = now() - interval '1 minute'`);
    assert.equal(await requeueExpiredLeases(t.db), 3);
    await assertMarksRead(ds, 'lease expired: the worker stopped before recording an outcome');
  });

  it('releaseLeases, with and without keepDue', async () => {
    for (const keepDue of [false, true]) {
      await t.db.query(`delete from deliveries`);
      const ds = await inFlight();
      assert.equal(await releaseLeases(t.db, ds.map((d) => d.leaseId), { keepDue }), 3);
      await assertMarksRead(ds, null);
    }
  });
});
