import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { setStatements, type Queryable } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';
import { COMPLETE_SETTINGS, completeAttempts, completionParams, type Outcome } from '../../src/delivery/complete.ts';
import { COMPLETE_ATTEMPTS, COMPLETE_ATTEMPTS_RECORDING_INCIDENTS } from '../../src/delivery/complete-statement.ts';
import { sweepDeliveries } from '../../src/delivery/retention.ts';
import type { ClaimedDelivery } from '../../src/delivery/transport.ts';
import { insertForwardDestination, type EndpointFixture } from '../helpers/fixtures.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { attempts, orgWithEndpoint } from './helpers.ts';

// A delivery's attempts go with it (the trigger of migration 0026, which
// replaced delivery_attempts' foreign key), and a completion never leaves an
// attempt behind a delivery deleted while it ran (complete-statement.ts,
// ATTEMPTS). The races run on both databases: on PostgreSQL the delete
// really waits for the completion's row locks (and the other way round);
// on PGlite, one connection, it waits for the transaction to end.

const URL = 'https://example.com/hook';
let t: TestDb;
let ep: EndpointFixture;
before(async () => {
  t = await openTestDb();
});
after(() => t.close());
beforeEach(async () => {
  await t.reset();
  ep = await orgWithEndpoint(t.db, URL);
});

/** An in-flight delivery of `ep` under a lease; `destinationId` puts it on a forward destination. */
async function inFlight(opts: { destinationId?: string; receivedAt?: Date } = {}): Promise<ClaimedDelivery> {
  const d = { id: newId(), leaseId: newId(), requestId: newId() };
  await t.db.query(
    `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type, url,
                             status, lease_id, lease_until, leased_by)
     values ($1::uuid, $2::uuid, $3::uuid, $4::timestamptz, $5::uuid, $6::uuid, 'https', $7, 'in_flight', $8::uuid, now() + interval '1 hour', 'node')`,
    [d.id, ep.organization_id, d.requestId, opts.receivedAt ?? new Date(), ep.id, opts.destinationId ?? null, URL, d.leaseId],
  );
  return {
    ...d,
    organizationId: ep.organization_id,
    endpointId: ep.id,
    forwardDestinationId: opts.destinationId ?? null,
    destinationType: 'https',
    url: URL,
    agentId: null,
    replayBatchId: null,
    attemptNumber: 1,
    sendAt: 0,
    capture: null,
    enabled: true,
    methodOverride: null,
    retry: { enabled: true, schedule: [60], intelligent: false },
  } as unknown as ClaimedDelivery;
}

function succeeded(delivery: ClaimedDelivery): Outcome {
  return { delivery, decision: { status: 'succeeded' }, result: { startedAt: new Date(), durationMs: 3, url: URL, statusCode: 200 } as Outcome['result'] };
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>(`select count(*)::int as n from (${sql}) x`, params);
  return rows[0].n;
}
const attemptsOf = async (id: string) => (await attempts(t.db, id)).length;
const orphans = () => count('select 1 from delivery_attempts a where not exists (select 1 from deliveries d where d.id = a.delivery_id)');

/** Runs a completion statement inside an open transaction, under the settings completeAttempts runs it with; returns the ids it moved. */
async function completeIn(tx: Queryable, statement: string, outcomes: Outcome[]): Promise<string[]> {
  await tx.exec(setStatements(COMPLETE_SETTINGS));
  const { rows } = await tx.query<{ id: string }>(statement, completionParams(outcomes, 'node'));
  return rows.map((r) => r.id);
}

/** Whether `p` is still pending after `ms`. */
async function stillWaiting(p: Promise<unknown>, ms = 300): Promise<boolean> {
  const pending = Symbol('pending');
  return (await Promise.race([p, new Promise((r) => setTimeout(() => r(pending), ms))])) === pending;
}

describe('attempts go with their delivery', () => {
  it('deleting an endpoint deletes its deliveries and their attempts', async () => {
    const d = await inFlight();
    assert.deepEqual([...(await completeAttempts(t.db, [succeeded(d)], 'node'))], [d.id]);
    assert.equal(await attemptsOf(d.id), 1);
    await t.db.query('delete from endpoints where id = $1::uuid', [ep.id]);
    assert.equal(await count('select 1 from deliveries'), 0);
    assert.equal(await attemptsOf(d.id), 0);
  });

  it("deleting a forward destination deletes its deliveries' attempts and no other's", async () => {
    const fd = await insertForwardDestination(t.db, ep, { url: URL });
    const onIt = await inFlight({ destinationId: fd.id });
    const other = await inFlight();
    await completeAttempts(t.db, [succeeded(onIt), succeeded(other)], 'node');
    await t.db.query('delete from forward_destinations where id = $1::uuid', [fd.id]);
    assert.equal(await attemptsOf(onIt.id), 0);
    assert.equal(await attemptsOf(other.id), 1);
    assert.equal(await orphans(), 0);
  });

  it("retention's sweep deletes old deliveries with their attempts, in one statement however many", async () => {
    const old = [];
    for (let i = 0; i < 20; i++) old.push(await inFlight({ receivedAt: new Date(Date.now() - 40 * 86_400_000) }));
    const fresh = await inFlight();
    await completeAttempts(t.db, [...old, fresh].map(succeeded), 'node');
    assert.equal(await count('select 1 from delivery_attempts'), 21);
    await sweepDeliveries(t.db, new Date(Date.now() - 30 * 86_400_000));
    assert.equal(await count('select 1 from delivery_attempts'), 1);
    assert.equal(await attemptsOf(fresh.id), 1);
    assert.equal(await orphans(), 0);
  });
});

for (const [name, statement] of [
  ['COMPLETE_ATTEMPTS', COMPLETE_ATTEMPTS],
  ['COMPLETE_ATTEMPTS_RECORDING_INCIDENTS', COMPLETE_ATTEMPTS_RECORDING_INCIDENTS],
] as const) {
  describe(`${name} and a delivery deleted meanwhile`, () => {
    it('records no attempt for a delivery deleted before it ran, and the others as usual', async () => {
      const gone = await inFlight();
      const kept = await inFlight();
      await t.db.query('delete from deliveries where id = $1::uuid', [gone.id]);
      const moved = await t.db.transaction((tx) => completeIn(tx, statement, [succeeded(gone), succeeded(kept)]));
      assert.deepEqual(moved, [kept.id]);
      assert.equal(await attemptsOf(gone.id), 0);
      assert.equal(await attemptsOf(kept.id), 1);
      assert.equal(await orphans(), 0);
    });

    it("still records the attempt of a delivery whose lease was lost (another lease holds it), without moving it", async () => {
      const d = await inFlight();
      await t.db.query('update deliveries set lease_id = $2::uuid where id = $1::uuid', [d.id, newId()]);
      const moved = await t.db.transaction((tx) => completeIn(tx, statement, [succeeded(d)]));
      assert.deepEqual(moved, []);
      assert.equal(await attemptsOf(d.id), 1);
      const { rows } = await t.db.query<{ status: string }>('select status from deliveries where id = $1::uuid', [d.id]);
      assert.equal(rows[0].status, 'in_flight');
    });

    for (const leaseLost of [false, true]) {
      it(`a delete that comes while it is uncommitted waits, then takes the attempt with the delivery (${leaseLost ? 'a lease lost: the row locked for key share' : 'the row it moved'})`, async () => {
        const d = await inFlight();
        if (leaseLost) await t.db.query('update deliveries set lease_id = $2::uuid where id = $1::uuid', [d.id, newId()]);
        let deleting: Promise<unknown> | undefined;
        await t.db.transaction(async (tx) => {
          await completeIn(tx, statement, [succeeded(d)]);
          deleting = t.db.query('delete from endpoints where id = $1::uuid', [ep.id]);
          assert.equal(await stillWaiting(deleting), true, 'the delete waits for the completion to commit');
        });
        await deleting;
        assert.equal(await count('select 1 from deliveries'), 0);
        assert.equal(await attemptsOf(d.id), 0);
        assert.equal(await orphans(), 0);
      });
    }

    it('a completion that comes while a delete is uncommitted waits, then records nothing', async () => {
      const d = await inFlight();
      let completing: Promise<string[]> | undefined;
      await t.db.transaction(async (tx) => {
        await tx.query('delete from endpoints where id = $1::uuid', [ep.id]);
        completing = t.db.transaction((c) => completeIn(c, statement, [succeeded(d)]));
        assert.equal(await stillWaiting(completing), true, 'the completion waits for the delete to commit');
      });
      assert.deepEqual(await completing, []);
      assert.equal(await attemptsOf(d.id), 0);
      assert.equal(await orphans(), 0);
    });
  });
}

it("an attempt's scheduled_at is the paced slot its claim gave, to the microsecond", async () => {
  const d = await inFlight();
  // a slot with microseconds, as a rate's spacing makes them (60 s / 7)
  const { rows: slot } = await t.db.query<{ ms: number; text: string }>(
    `select (extract(epoch from s) * 1000)::float8 as ms, s::text as text
       from (select date_trunc('second', now()) + interval '8.571428 seconds' as s) x`,
  );
  await completeAttempts(t.db, [succeeded({ ...d, pacedSlotMs: slot[0].ms })], 'node');
  const { rows } = await t.db.query<{ text: string }>('select scheduled_at::text as text from delivery_attempts where delivery_id = $1::uuid', [d.id]);
  assert.equal(rows[0].text, slot[0].text);
});
