import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { FIRST_ANALYZE_ROWS, startTableMaintenance, TABLE_MAINTENANCE_LOCK_KEY, type MaintenanceStep, type TableMaintenanceOptions } from '../../src/db/table-maintenance.ts';
import { createEndpoint } from '../../src/endpoints/endpoints.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { dayStart, DAY_MS, maintainPartitions, partitionName } from '../../src/requests/partitions.ts';
import { seedOrg } from '../helpers/app.ts';
import { bulkCaptures, bulkDeliveries, flushed } from '../helpers/bulk.ts';
import { onPostgres, openTestDb, resetWithoutPartitions, type TestDb } from '../helpers/db.ts';

// PGlite has no autovacuum and no auto-analyze (src/db/table-maintenance.ts);
// on PostgreSQL autovacuum reaches fresh partitions late. These run Weir's
// own maintenance on both, with the server's autovacuum kept out of the
// tables a test watches (autovacuum_enabled = false) so only Weir acts.

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
beforeEach(async () => {
  await resetWithoutPartitions(t);
  // reset() keeps table options; a test that kept autovacuum out of deliveries lets it back in
  await t.db.exec('alter table deliveries reset (autovacuum_enabled, autovacuum_vacuum_scale_factor)');
});
after(() => t.close());

const NOW = Date.now();
const TODAY = partitionName(dayStart(NOW));

function collectingLogger() {
  const errors: unknown[] = [];
  const warnings: unknown[] = [];
  return {
    errors,
    warnings,
    logger: { info: () => {}, warn: (...a: unknown[]) => void warnings.push(a), error: (...a: unknown[]) => void errors.push(a) } as never,
  };
}

/** One maintenance pass, as a node runs it; fails the test on a logged error. */
async function pass(db: Db, opts: TableMaintenanceOptions = {}): Promise<MaintenanceStep[] | undefined> {
  const log = collectingLogger();
  const m = await startTableMaintenance(db, log.logger, { ...opts, checkEveryMs: 3_600_000 });
  try {
    const steps = await m.runOnce();
    assert.deepEqual(log.errors, []);
    return steps;
  } finally {
    await m.stop();
  }
}

async function endpoint(db: Db) {
  const s = await seedOrg(db);
  const r = await createEndpoint(db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: null });
  assert.ok(r.ok);
  return r.endpoint;
}

async function stats(db: Db, table: string) {
  const { rows } = await db.query<{ analyzed: boolean; dead: number; live: number }>(
    `select (last_analyze is not null or last_autoanalyze is not null) as analyzed, n_dead_tup::int as dead, n_live_tup::int as live
       from pg_stat_user_tables where relname = $1`,
    [table],
  );
  return rows[0];
}

/** Whether the planner has column statistics for this table. */
async function hasColumnStats(db: Db, table: string, column: string): Promise<boolean> {
  const { rows } = await db.query('select 1 from pg_stats where tablename = $1 and attname = $2', [table, column]);
  return rows.length > 0;
}

describe('table maintenance', () => {
  it('runs on an idle database and finds nothing to do', async () => {
    assert.deepEqual(await pass(t.db), []);
    assert.deepEqual(await pass(t.db, { autovacuum: false }), []);
  });

  it(`analyzes a fresh capture partition once it holds ${FIRST_ANALYZE_ROWS} rows, and again when it has doubled`, async () => {
    await maintainPartitions(t.db, NOW, 30, 0);
    await t.db.exec(`alter table ${TODAY} set (autovacuum_enabled = false)`);
    const e = await endpoint(t.db);
    await bulkCaptures(t.db, e, FIRST_ANALYZE_ROWS - 1, dayStart(NOW) + 1_000);
    assert.deepEqual((await pass(t.db))?.filter((s) => s.table === TODAY), []);
    assert.equal(await hasColumnStats(t.db, TODAY, 'endpoint_id'), false, 'no statistics below the threshold');

    await bulkCaptures(t.db, e, 1, dayStart(NOW) + 1_000, FIRST_ANALYZE_ROWS - 1);
    const steps = (await pass(t.db))?.filter((s) => s.table === TODAY);
    assert.deepEqual(steps?.map((s) => s.action), ['analyze']);
    assert.equal(await hasColumnStats(t.db, TODAY, 'endpoint_id'), true);
    assert.equal(await hasColumnStats(t.db, TODAY, 'body'), false, 'bodies are not sampled for statistics');

    // Grown by less than its size: not yet; once doubled: again.
    await bulkCaptures(t.db, e, FIRST_ANALYZE_ROWS - 1, dayStart(NOW) + 1_000, FIRST_ANALYZE_ROWS);
    assert.deepEqual((await pass(t.db))?.filter((s) => s.table === TODAY), []);
    await bulkCaptures(t.db, e, 1, dayStart(NOW) + 1_000, 2 * FIRST_ANALYZE_ROWS - 1);
    assert.deepEqual((await pass(t.db))?.filter((s) => s.table === TODAY).map((s) => s.action), ['analyze']);
    const { rows } = await t.db.query<{ n: number }>('select reltuples::int as n from pg_class where relname = $1', [TODAY]);
    assert.equal(rows[0].n, 2 * FIRST_ANALYZE_ROWS, 'the planner knows the partition size');
  });

  it('vacuums deliveries once a fifth of them are dead, and the space is reused instead of growing the table', async () => {
    const e = await endpoint(t.db);
    await bulkDeliveries(t.db, e, 5_000);
    const settle = async () => {
      await flushed(t.db, `update deliveries set status = 'succeeded', attempt_count = attempt_count + 1, updated_at = now()`);
      return pass(t.db, { autovacuum: false });
    };
    await t.db.exec('alter table deliveries set (autovacuum_enabled = false)');
    const first = (await settle())?.filter((s) => s.table === 'deliveries');
    assert.deepEqual(first?.map((s) => s.action), ['vacuum analyze'], 'never analyzed, and 5,000 dead rows');
    await flushed(t.db, 'select 1');
    assert.equal((await stats(t.db, 'deliveries')).dead, 0, 'the dead rows are gone');
    const size = async () => (await t.db.query<{ b: number }>(`select pg_relation_size('deliveries')::float8 as b`)).rows[0].b;
    const afterFirst = await size();
    for (let round = 0; round < 3; round++) {
      assert.deepEqual((await settle())?.filter((s) => s.table === 'deliveries').map((s) => s.action.startsWith('vacuum')), [true]);
    }
    // Without vacuum each round of updates adds a table's worth of new row
    // versions (4 rounds: about 4 times the size); with it they reuse the
    // space of the previous round's dead rows.
    assert.ok((await size()) <= afterFirst * 1.5, `deliveries grew from ${afterFirst} to ${await size()} bytes`);
  });

  it("follows a table's own autovacuum_vacuum_scale_factor, as autovacuum would", async () => {
    const e = await endpoint(t.db);
    await bulkDeliveries(t.db, e, 5_000);
    await t.db.exec('alter table deliveries set (autovacuum_enabled = false)');
    await pass(t.db, { autovacuum: false }); // first analyze: the planner's size of the table is known
    const dead200 = () => flushed(t.db, `update deliveries set attempt_count = attempt_count + 1 where id in (select id from deliveries order by id limit 200)`);
    await dead200();
    assert.deepEqual((await pass(t.db, { autovacuum: false }))?.filter((s) => s.table === 'deliveries' && s.action !== 'analyze'), [], '200 dead rows of 5,000: under 50 + 20%');
    await t.db.exec('alter table deliveries set (autovacuum_vacuum_scale_factor = 0.01)');
    await dead200();
    const steps = (await pass(t.db, { autovacuum: false }))?.filter((s) => s.table === 'deliveries');
    assert.deepEqual(steps?.map((s) => s.action.startsWith('vacuum')), [true], 'over 50 + 1%');
    await t.db.exec('alter table deliveries reset (autovacuum_vacuum_scale_factor)');
  });

  it('leaves vacuum and unpartitioned tables to a running autovacuum, but still analyzes fresh partitions', { skip: !onPostgres && 'PGlite has no autovacuum' }, async () => {
    await maintainPartitions(t.db, NOW, 30, 0);
    // the server's autovacuum must not beat Weir to the partition; deliveries stay covered by it
    await t.db.exec(`alter table ${TODAY} set (autovacuum_enabled = false)`);
    const e = await endpoint(t.db);
    await bulkDeliveries(t.db, e, 3_000);
    await flushed(t.db, `update deliveries set status = 'succeeded'`);
    await bulkCaptures(t.db, e, FIRST_ANALYZE_ROWS, dayStart(NOW) + 1_000);
    const steps = (await pass(t.db, { autovacuum: true })) ?? [];
    assert.deepEqual(steps.filter((s) => s.table === 'deliveries'), []);
    assert.deepEqual(steps.filter((s) => s.table === TODAY).map((s) => s.action), ['analyze']);
  });

  it('runs on a busy database: captures and delivery updates keep committing while it analyzes and vacuums', async () => {
    await maintainPartitions(t.db, NOW, 30, 0);
    await t.db.exec(`alter table ${TODAY} set (autovacuum_enabled = false)`);
    const e = await endpoint(t.db);
    await bulkDeliveries(t.db, e, 4_000);
    await flushed(t.db, `update deliveries set status = 'succeeded'`);
    await bulkCaptures(t.db, e, 3 * FIRST_ANALYZE_ROWS, dayStart(NOW) + 1_000);
    let stop = false;
    let writes = 0;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        await bulkCaptures(t.db, e, 50, dayStart(NOW) + 1_000, 3 * FIRST_ANALYZE_ROWS + i * 50);
        await t.db.query(`update deliveries set attempt_count = attempt_count + 1 where id in (select id from deliveries limit 20)`);
        writes++;
      }
    })();
    try {
      const steps = (await pass(t.db, { autovacuum: false })) ?? [];
      assert.ok(steps.some((s) => s.table === TODAY && s.action === 'analyze'), 'the partition was analyzed');
      assert.ok(steps.some((s) => s.table === 'deliveries' && s.action.startsWith('vacuum')), 'deliveries were vacuumed');
    } finally {
      stop = true;
      await writer;
    }
    assert.ok(writes > 0);
    assert.equal((await stats(t.db, TODAY)).analyzed, true);
  });

  it('runs on one node at a time: a pass skips while another session holds the lock', { skip: !onPostgres && 'PGlite has one process' }, async () => {
    const e = await endpoint(t.db);
    await bulkDeliveries(t.db, e, 1_000);
    await flushed(t.db, `update deliveries set status = 'succeeded'`);
    await t.db.session(async (other) => {
      await other.query('select pg_advisory_lock($1)', [TABLE_MAINTENANCE_LOCK_KEY]);
      try {
        assert.equal(await pass(t.db, { autovacuum: false }), undefined);
      } finally {
        await other.query('select pg_advisory_unlock($1)', [TABLE_MAINTENANCE_LOCK_KEY]);
      }
    });
    assert.ok((await pass(t.db, { autovacuum: false }))?.some((s) => s.table === 'deliveries'));
  });

  it('analyzes a partition when it is created', async () => {
    const tomorrow = partitionName(dayStart(NOW) + DAY_MS);
    await maintainPartitions(t.db, NOW, 30, 1);
    await flushed(t.db, 'select 1');
    assert.equal((await stats(t.db, tomorrow)).analyzed, true);
  });
});
