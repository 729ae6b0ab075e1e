import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { createEndpoint, deleteEndpoint, updateEndpoint } from '../../src/endpoints/endpoints.ts';
import { CaptureBatcher, type BatcherOptions } from '../../src/ingest/batcher.ts';
import type { Capture } from '../../src/requests/captures.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { createFreshDatabase, onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';
import { seedOrg } from '../helpers/app.ts';
import { captureOf } from '../helpers/fixtures.ts';
import { openPostgres } from '../../src/db/postgres.ts';

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
beforeEach(() => t.reset());
after(() => t.close());

/**
 * The real database, counting the capture statements it is asked to run
 * (queries named 'weir_capture', src/ingest/store.ts); the captures in them
 * are counted in the table afterwards. `hold()` makes the next capture statement wait, before it is
 * sent, until the returned release() is called; `entered` resolves once it
 * is waiting: a batch provably in flight, without timing anything.
 */
interface Counting extends Db {
  statements: number;
  hold(): { entered: Promise<void>; release(): void };
}

function counting(db: Db): Counting {
  let gate: { enter(): void; released: Promise<void> } | undefined;
  const wrapped: Counting = {
    ...db,
    statements: 0,
    async query(text, params, opts) {
      if (opts?.name === 'weir_capture') {
        wrapped.statements++;
        const g = gate;
        gate = undefined;
        if (g) {
          g.enter();
          await g.released;
        }
      }
      return db.query(text, params, opts);
    },
    hold() {
      let enter!: () => void;
      let release!: () => void;
      const entered = new Promise<void>((r) => (enter = r));
      gate = { enter, released: new Promise<void>((r) => (release = r)) };
      return { entered, release };
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
  return captureOf(e, { body, path, headers: [['X', '1']] });
}

const opts = (o: Partial<BatcherOptions> = {}): BatcherOptions => ({ batchMs: 20, maxInFlight: 1, ...o });
const count = async (db: Db) => (await db.query<{ n: number }>('select count(*)::int as n from captured_requests')).rows[0].n;

test('captures submitted within one tick commit in one statement', async () => {
  const e = await endpoint(t.db);
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts());
  const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => b.submit(capture(e, `b${i}`))));
  assert.deepEqual([...new Set(outcomes)], ['stored']);
  assert.equal(db.statements, 1);
  assert.equal(await count(t.db), 50);
  await b.close();
});

test('a batch is cut at maxBatchRows and the rest follows, each batch in one statement', async () => {
  const e = await endpoint(t.db);
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts({ maxBatchRows: 10 }));
  await Promise.all(Array.from({ length: 35 }, () => b.submit(capture(e))));
  assert.equal(db.statements, 4);
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

test('the deliveries of a capture are enqueued in its statement', async () => {
  const e = await endpoint(t.db, 'https://receiver.example/hook');
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts());
  const c = capture(e);
  assert.equal(await b.submit(c), 'stored');
  assert.equal(db.statements, 1);
  const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from deliveries where request_id = $1::uuid', [c.id]);
  assert.equal(rows[0].n, 1);
  await b.close();
});

test('with batchMs 0, captures submitted in one turn of the event loop leave together in one statement', async () => {
  const e = await endpoint(t.db);
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts({ batchMs: 0 }));
  const submitted = Array.from({ length: 20 }, (_, i) => b.submit(capture(e, `t${i}`)));
  const outcomes = await Promise.all(submitted);
  assert.deepEqual(outcomes, Array(20).fill('stored'));
  assert.equal(db.statements, 1);
  assert.equal(await count(t.db), 20);
  // A later turn starts a new group.
  assert.equal(await b.submit(capture(e, 'later')), 'stored');
  assert.equal(db.statements, 2);
  assert.equal(await count(t.db), 21);
  await b.close();
});

test('with turns 2 a group also takes the captures of the next turn of the event loop', async () => {
  const e = await endpoint(t.db);
  for (const [turns, statements] of [
    [1, 2],
    [2, 1],
  ] as const) {
    const db = counting(t.db);
    const b = new CaptureBatcher(db, opts({ batchMs: 0, turns }));
    const first = b.submit(capture(e));
    const second = new Promise<string>((resolve) => setImmediate(() => resolve(b.submit(capture(e)))));
    assert.deepEqual(await Promise.all([first, second]), ['stored', 'stored']);
    assert.equal(db.statements, statements, `turns ${turns}`);
    await b.close();
  }
});

test('while maxInFlight batches are in flight, new captures queue and leave together in the next statement', async () => {
  const e = await endpoint(t.db);
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts({ batchMs: 0, maxInFlight: 1 }));
  const gate = db.hold();
  const first = b.submit(capture(e, 'first'));
  await gate.entered; // the first batch is in flight and cannot finish until released
  assert.equal(db.statements, 1);
  // Submitted over several turns of the event loop while the slot is taken.
  const queued: Promise<string>[] = [];
  for (let i = 0; i < 6; i++) {
    queued.push(b.submit(capture(e, `q${i}`)));
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(db.statements, 1, 'nothing else leaves while the only slot is taken');
  assert.equal(await count(t.db), 0, 'the held statement has not run');
  gate.release();
  // The first statement was sent before the others were submitted, so it carried one capture.
  assert.equal(await first, 'stored');
  assert.deepEqual(await Promise.all(queued), Array(6).fill('stored'));
  assert.equal(db.statements, 2, 'the six queued captures left in one statement');
  assert.equal(await count(t.db), 7);
  await b.close();
});

test('with two slots a second batch commits beside a large one, never beside a small one', async () => {
  const e = await endpoint(t.db);
  const db = counting(t.db);
  const b = new CaptureBatcher(db, opts({ batchMs: 0, maxInFlight: 2, heavyBatchBytes: 1000 }));
  const turn = () => new Promise((r) => setImmediate(r));

  // A small batch in flight: the next capture waits for it, then follows.
  const small = db.hold();
  const first = b.submit(capture(e, 'small'));
  await small.entered;
  const second = b.submit(capture(e, 'also small'));
  await turn();
  await turn();
  assert.equal(db.statements, 1, 'nothing goes beside a small batch');
  small.release();
  assert.deepEqual(await Promise.all([first, second]), ['stored', 'stored']);
  assert.equal(db.statements, 2);

  // A large batch in flight: the next capture is stored beside it, before it commits.
  const large = db.hold();
  const big = b.submit(capture(e, 'x'.repeat(2000)));
  await large.entered;
  assert.equal(await b.submit(capture(e, 'small again')), 'stored');
  assert.equal(db.statements, 4);
  large.release();
  assert.equal(await big, 'stored');
  assert.equal(await count(t.db), 4);
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
  // Conditions, not sleeps: captures landed before the delete, and the stream
  // went on until some were refused after it (each wait has a deadline).
  const until = async (what: string, ok: () => boolean) => {
    const deadline = Date.now() + 30_000;
    while (!ok()) {
      if (Date.now() > deadline) {
        stop = true;
        throw new Error(`timed out waiting for ${what}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  await until('a capture stored before the delete', () => outcomes.includes('stored'));
  assert.ok((await deleteEndpoint(t.db, e.organization_id, e.id, null)).ok);
  const before = outcomes.length;
  await until('a capture refused after the delete', () => outcomes.slice(before).includes('endpoint_gone'));
  stop = true;
  await stream;
  await b.close();
  assert.ok(outcomes.includes('stored') && outcomes.includes('endpoint_gone'), 'captures landed before and were refused after');
  const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from captured_requests where endpoint_id = $1', [e.id]);
  assert.equal(rows[0].n, 0);
});
