import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';
import { createEndpoint, deleteEndpoint, updateEndpoint } from '../../src/endpoints/endpoints.ts';
import { CaptureBatcher, type BatcherOptions } from '../../src/ingest/batcher.ts';
import { idTime } from '../../src/requests/capture-ids.ts';
import type { Capture } from '../../src/requests/captures.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { createFreshDatabase, onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';
import { seedOrg } from '../helpers/app.ts';
import { openPostgres } from '../../src/db/postgres.ts';

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
beforeEach(() => t.reset());
after(() => t.close());

/** The real database, counting the transactions it is asked for. */
function counting(db: Db): Db & { transactions: number } {
  const wrapped: Db & { transactions: number } = {
    ...db,
    transactions: 0,
    transaction(fn) {
      wrapped.transactions++;
      return db.transaction(fn);
    },
  };
  return wrapped;
}

async function endpoint(db: Db, forwardUrl?: string) {
  const s = await seedOrg(db);
  const r = await createEndpoint(db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: s.memberId, forwardUrl });
  assert.ok(r.ok);
  return r.endpoint;
}

function capture(e: { id: string; organization_id: string }, body = 'x', path = '/p'): Capture {
  const id = newId();
  const buf = Buffer.from(body);
  return {
    id,
    organization_id: e.organization_id,
    endpoint_id: e.id,
    received_at: new Date(idTime(id)),
    method: 'POST',
    path,
    query: '',
    headers: [['X', '1']],
    body: buf,
    body_size: buf.length,
    content_type: null,
    source_ip: '127.0.0.1',
  };
}

const opts = (o: Partial<BatcherOptions> = {}): BatcherOptions => ({ batchMs: 20, maxInFlight: 1, ...o });
const count = async (db: Db) => (await db.query<{ n: number }>('select count(*)::int as n from captured_requests')).rows[0].n;

test('captures submitted within one tick commit in one transaction', async () => {
  const e = await endpoint(t.db);
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts());
  const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => b.submit(capture(e, `b${i}`))));
  assert.deepEqual([...new Set(outcomes)], ['stored']);
  assert.equal(db.transactions, 1);
  assert.equal(await count(t.db), 50);
  await b.close();
});

test('a batch is cut at maxBatchRows and the rest follows', async () => {
  const e = await endpoint(t.db);
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts({ maxBatchRows: 10 }));
  await Promise.all(Array.from({ length: 35 }, () => b.submit(capture(e))));
  assert.equal(db.transactions, 4);
  assert.equal(await count(t.db), 35);
  await b.close();
});

test('captures of an endpoint paused or deleted after the lookup are refused, the rest of the batch is stored', async () => {
  const live = await endpoint(t.db);
  const paused = await endpoint(t.db);
  const gone = await endpoint(t.db);
  const b = new CaptureBatcher(t.db, opts());
  await updateEndpoint(t.db, paused.organization_id, paused.id, { paused: true }, null);
  await deleteEndpoint(t.db, gone.organization_id, gone.id, null);
  const outcomes = await Promise.all([b.submit(capture(live)), b.submit(capture(paused)), b.submit(capture(gone)), b.submit(capture(live))]);
  assert.deepEqual(outcomes, ['stored', 'endpoint_paused', 'endpoint_gone', 'stored']);
  const { rows } = await t.db.query<{ endpoint_id: string }>('select endpoint_id from captured_requests');
  assert.deepEqual(rows.map((r) => r.endpoint_id), [live.id, live.id]);
  await b.close();
});

test('one row the database refuses does not fail the others of its batch', async () => {
  const e = await endpoint(t.db);
  const b = new CaptureBatcher(t.db, opts());
  const results = await Promise.allSettled([b.submit(capture(e, 'a')), b.submit(capture(e, 'b', '/nul\u0000here')), b.submit(capture(e, 'c'))]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.equal(await count(t.db), 2);
  await b.close();
});

test('when too much is queued new captures are answered overloaded, not buffered', async () => {
  const e = await endpoint(t.db);
  const b = new CaptureBatcher(t.db, opts({ maxQueuedRows: 2, batchMs: 50 }));
  const outcomes = await Promise.all([b.submit(capture(e)), b.submit(capture(e)), b.submit(capture(e))]);
  assert.deepEqual(outcomes, ['stored', 'stored', 'overloaded']);
  await b.close();
});

test('close() commits what is queued before it resolves, then refuses', async () => {
  const e = await endpoint(t.db);
  const b = new CaptureBatcher(t.db, opts({ batchMs: 1_000 }));
  const pending = b.submit(capture(e));
  await b.close();
  assert.equal(await pending, 'stored');
  assert.equal(await count(t.db), 1);
  await assert.rejects(b.submit(capture(e)));
});

test('the deliveries of a capture are enqueued in its transaction', async () => {
  const e = await endpoint(t.db, 'https://receiver.example/hook');
  const b = new CaptureBatcher(t.db, opts());
  const c = capture(e);
  assert.equal(await b.submit(c), 'stored');
  const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from deliveries where request_id = $1::uuid', [c.id]);
  assert.equal(rows[0].n, 1);
  await b.close();
});

test('an endpoint locked by a delete in progress does not stall the batch: its capture gets endpoint_busy', { skip: !onPostgres && 'needs a second PostgreSQL connection holding the lock' }, async () => {
  const fresh = await createFreshDatabase();
  const { migrate } = await import('../../src/db/migrate.ts');
  const a = await openPostgres(fresh.url, { poolSize: 4 });
  try {
    await migrate(a);
    const busy = await endpoint(a);
    const free = await endpoint(a);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const deleting = a.transaction(async (tx) => {
      await tx.query('select 1 from endpoints where id = $1 for update', [busy.id]);
      locked();
      await held;
    });
    await isLocked;
    const b = new CaptureBatcher(a, opts());
    const outcomes = await Promise.all([b.submit(capture(busy)), b.submit(capture(free))]);
    assert.deepEqual(outcomes, ['endpoint_busy', 'stored']);
    release();
    await deleting;
    await b.close();
  } finally {
    await a.close();
    await fresh.drop();
  }
});

test('deleting an endpoint while its captures stream in leaves none of them behind', async () => {
  const e = await endpoint(t.db);
  const b = new CaptureBatcher(t.db, opts({ batchMs: 1, maxInFlight: 3 }));
  let stop = false;
  const outcomes: string[] = [];
  const stream = (async () => {
    while (!stop) {
      const round = await Promise.allSettled(Array.from({ length: 20 }, () => b.submit(capture(e))));
      for (const r of round) outcomes.push(r.status === 'fulfilled' ? r.value : 'error');
    }
  })();
  await new Promise((r) => setTimeout(r, 100));
  assert.ok((await deleteEndpoint(t.db, e.organization_id, e.id, null)).ok);
  await new Promise((r) => setTimeout(r, 100));
  stop = true;
  await stream;
  await b.close();
  assert.ok(outcomes.includes('stored') && outcomes.includes('endpoint_gone'), 'captures landed before and were refused after');
  const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from captured_requests where endpoint_id = $1', [e.id]);
  assert.equal(rows[0].n, 0);
});
