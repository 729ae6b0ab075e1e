import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import pino from 'pino';
import type { Db } from '../../src/db/db.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { createEndpoint } from '../../src/endpoints/endpoints.ts';
import { DEFAULT_PLANS, type PlanName } from '../../src/orgs/plans.ts';
import { getCapture } from '../../src/requests/captures.ts';
import { dayStart, DAY_MS, listPartitions, maintainPartitions, PARTITION_LOCK_KEY, partitionName } from '../../src/requests/partitions.ts';
import { startCaptureMaintenance, sweepExpiredCaptures, SWEEP_LOCK_KEY } from '../../src/requests/retention.ts';
import { seedOrg, testConfig } from '../helpers/app.ts';
import { onPostgres, openTestDb, resetWithoutPartitions, type TestDb } from '../helpers/db.ts';
import { storeCaptures } from './fixtures.ts';

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
beforeEach(() => resetWithoutPartitions(t));
after(() => t.close());

const NOW = Date.now();

async function endpointOn(db: Db, plan: PlanName) {
  const s = await seedOrg(db, { plan });
  const r = await createEndpoint(db, DEFAULT_PLANS, s.org.id, { name: plan, createdBy: null });
  assert.ok(r.ok);
  return r.endpoint;
}

/** Captures `ages` days old (fractional days allowed), returning id -> age. */
async function capturesAged(db: Db, e: { id: string; organization_id: string }, ages: number[]) {
  const caps = await storeCaptures(db, e, ages.map((a) => ({ at: NOW - a * DAY_MS })));
  return new Map(caps.map((c, i) => [c.id, ages[i]]));
}

async function remainingAges(db: Db, aged: Map<string, number>): Promise<number[]> {
  const { rows } = await db.query<{ id: string }>('select id from captured_requests where id = any($1::uuid[])', [[...aged.keys()]]);
  return rows.map((r) => aged.get(r.id)!).sort((a, b) => a - b);
}

const whereIs = async (db: Db, id: string) => (await db.query<{ part: string }>('select tableoid::regclass::text as part from captured_requests where id = $1', [id])).rows[0]?.part;

test('creates today\'s partition and the next days\', idempotently, and captures land in their day', async () => {
  const first = await maintainPartitions(t.db, NOW, 30, 3);
  const days = [0, 1, 2, 3].map((d) => partitionName(dayStart(NOW) + d * DAY_MS));
  assert.deepEqual(first.created, days);
  assert.deepEqual((await maintainPartitions(t.db, NOW, 30, 3)).created, []);
  assert.deepEqual((await listPartitions(t.db)).map((p) => p.name), days);
  const e = await endpointOn(t.db, 'free');
  const [today] = await storeCaptures(t.db, e, [{ at: NOW }]);
  const [tomorrow] = await storeCaptures(t.db, e, [{ at: dayStart(NOW) + DAY_MS + 60_000 }]);
  assert.equal(await whereIs(t.db, today.id), days[0]);
  assert.equal(await whereIs(t.db, tomorrow.id), days[1]);
});

test('drops whole days older than the longest retention, with their rows, and keeps the rest', async () => {
  await maintainPartitions(t.db, NOW - 40 * DAY_MS, 365, 2);
  await maintainPartitions(t.db, NOW, 365, 1);
  const e = await endpointOn(t.db, 'business');
  const aged = await capturesAged(t.db, e, [39.5, 0]);
  const report = await maintainPartitions(t.db, NOW, 30, 1);
  assert.deepEqual(report.dropped.sort(), [40, 39, 38].map((d) => partitionName(dayStart(NOW - d * DAY_MS))).sort());
  assert.deepEqual((await listPartitions(t.db)).map((p) => p.name), [0, 1].map((d) => partitionName(dayStart(NOW) + d * DAY_MS)));
  assert.deepEqual(await remainingAges(t.db, aged), [0]);
});

test('a day whose rows already sit in the default partition is left there, still readable', async () => {
  const e = await endpointOn(t.db, 'free');
  const future = dayStart(NOW) + 5 * DAY_MS + 1000;
  const [early] = await storeCaptures(t.db, e, [{ at: future }]);
  assert.equal(await whereIs(t.db, early.id), 'captured_requests_default');
  const report = await maintainPartitions(t.db, NOW, 30, 7);
  assert.deepEqual(report.skipped.map((s) => s.name), [partitionName(dayStart(future))]);
  assert.equal(report.created.length, 7);
  assert.equal((await getCapture(t.db, e.organization_id, early.id))?.id, early.id);
});

test('the sweep removes captures past their plan\'s retention, in batches, across default and day partitions', async () => {
  await maintainPartitions(t.db, NOW, 365, 1);
  const free = await endpointOn(t.db, 'free'); // 7 days
  const starter = await endpointOn(t.db, 'starter'); // 30 days
  const business = await endpointOn(t.db, 'business'); // 365 days
  const f = await capturesAged(t.db, free, [0, 1, 6.9, 7.1, 8, 20, 400]);
  const s = await capturesAged(t.db, starter, [0, 29, 31, 200]);
  const b = await capturesAged(t.db, business, [0, 8, 364, 366, 400]);
  const deleted = await sweepExpiredCaptures(t.db, DEFAULT_PLANS, NOW, { full: true, batchSize: 2 });
  assert.equal(deleted, 4 + 2 + 2);
  assert.deepEqual(await remainingAges(t.db, f), [0, 1, 6.9]);
  assert.deepEqual(await remainingAges(t.db, s), [0, 29]);
  assert.deepEqual(await remainingAges(t.db, b), [0, 8, 364]);
});

test('a regular sweep looks back only a couple of days; the full sweep catches the rest (a plan downgrade)', async () => {
  const free = await endpointOn(t.db, 'free');
  const f = await capturesAged(t.db, free, [1, 8, 20]);
  await sweepExpiredCaptures(t.db, DEFAULT_PLANS, NOW, { full: false });
  assert.deepEqual(await remainingAges(t.db, f), [1, 20]);
  await sweepExpiredCaptures(t.db, DEFAULT_PLANS, NOW, { full: true });
  assert.deepEqual(await remainingAges(t.db, f), [1]);
});

test('the sweep stops between batches when asked to', async () => {
  const free = await endpointOn(t.db, 'free');
  await capturesAged(t.db, free, [10, 11, 12, 13]);
  let batches = 0;
  const deleted = await sweepExpiredCaptures(t.db, DEFAULT_PLANS, NOW, { full: true, batchSize: 1, stopping: () => batches++ >= 2 });
  assert.equal(deleted, 1);
});

test('with another node holding the locks, this node skips partition DDL and the sweep', { skip: !onPostgres && 'needs a second PostgreSQL session' }, async () => {
  const other = await openPostgres(t.url!, { poolSize: 1 });
  try {
    const free = await endpointOn(t.db, 'free');
    const f = await capturesAged(t.db, free, [10]);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = other.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1), pg_advisory_xact_lock($2)', [SWEEP_LOCK_KEY, PARTITION_LOCK_KEY]);
      locked();
      await held;
    });
    await isLocked;
    assert.equal(await sweepExpiredCaptures(t.db, DEFAULT_PLANS, NOW, { full: true }), 0);
    assert.deepEqual(await remainingAges(t.db, f), [10]);
    const report = await maintainPartitions(t.db, NOW, 30, 1);
    assert.deepEqual(report.created, []);
    assert.match(report.skipped[0].why, /another node/);
    release();
    await holder;
    assert.equal(await sweepExpiredCaptures(t.db, DEFAULT_PLANS, NOW, { full: true }), 1);
  } finally {
    await other.close();
  }
});

test('the background maintenance creates partitions at start, sweeps on demand and stops cleanly', async () => {
  const free = await endpointOn(t.db, 'free');
  // 1.5 days, not less: a capture of today would sit in the default
  // partition and rightly keep today's partition from being created.
  const f = await capturesAged(t.db, free, [1.5, 9]);
  const m = await startCaptureMaintenance({ db: t.db, config: testConfig(), logger: pino({ level: 'silent' }) });
  try {
    assert.equal((await listPartitions(t.db)).length, 8, 'today and 7 days ahead');
    await m.runOnce(true);
    assert.deepEqual(await remainingAges(t.db, f), [1.5]);
  } finally {
    await m.stop();
  }
});
