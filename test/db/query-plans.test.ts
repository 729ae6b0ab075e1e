import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { idFloor } from '../../src/db/ids.ts';
import { maintainTables } from '../../src/db/table-maintenance.ts';
import { FORWARD_URL_SUCCEEDED_SINCE, succeededSince } from '../../src/delivery/replay-batch.ts';
import { createEndpoint } from '../../src/endpoints/endpoints.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { capturePageStatement, withIndexPlan, type CaptureFilters } from '../../src/requests/captures.ts';
import { dayStart, partitionName } from '../../src/requests/partitions.ts';
import { seedOrg } from '../helpers/app.ts';
import { bulkCaptures } from '../helpers/bulk.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';

// Hot statements must keep their plan whatever the statistics say: a day
// partition filled at capture rates is read before anyone analyzed it. The
// plans are asserted, not timed: on 100,000 unanalyzed captures (the
// partition created bare, as before Weir analyzed new partitions) and again
// once analyzed.

const N = 100_000;
let t: TestDb;
let e: { id: string; organization_id: string };
const start = dayStart(Date.now()) + 1_000;
const part = partitionName(dayStart(Date.now()));

before(async () => {
  t = await openTestDb();
  const from = new Date(dayStart(Date.now())).toISOString();
  const to = new Date(dayStart(Date.now()) + 86_400_000).toISOString();
  await t.db.exec(`create table ${part} partition of captured_requests for values from ('${from}') to ('${to}')`);
  // keep a running autovacuum (PostgreSQL) from analyzing it behind the test's back
  await t.db.exec(`alter table ${part} set (autovacuum_enabled = false)`);
  const s = await seedOrg(t.db);
  const r = await createEndpoint(t.db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: null });
  assert.ok(r.ok);
  e = r.endpoint;
  await bulkCaptures(t.db, e, N, start);
});
after(() => t.close());

async function planOf(f: CaptureFilters): Promise<string> {
  const page = capturePageStatement(e.organization_id, e.id, f);
  return withIndexPlan(t.db, async (tx) => {
    const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`explain ${page.text}`, page.params);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

const pages: [string, () => CaptureFilters][] = [
  ['the newest page', () => ({ limit: 25 })],
  ['a page 1,000 pages deep', () => ({ limit: 25, before: idOf(N - 25_000) })],
  ['a search', () => ({ limit: 25, q: 'needle' })],
  ['a page of one method within a time range', () => ({ limit: 25, methods: ['POST'], since: new Date(start), until: new Date(start + N) })],
];

/** The id bulkCaptures gave capture number g (see test/helpers/bulk.ts). */
function idOf(g: number): string {
  const hex = (start + g).toString(16).padStart(12, '0') + '70008000' + g.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function assertIndexWalk(plan: string) {
  assert.match(plan, new RegExp(`Index Scan Backward using ${part}_endpoint_id_id_idx on ${part}`), plan);
  assert.doesNotMatch(plan, /Sort\b(?! Key)|Bitmap|Seq Scan/, plan);
}

describe('capture page plans', () => {
  for (const [name, filters] of pages) {
    it(`${name} walks the endpoint index backwards on ${N.toLocaleString('en')} unanalyzed captures`, async () => {
      const { rows } = await t.db.query<{ never: boolean }>(`select last_analyze is null and last_autoanalyze is null as never from pg_stat_user_tables where relname = $1`, [part]);
      assert.equal(rows[0].never, true, 'the partition has never been analyzed');
      assertIndexWalk(await planOf(filters()));
    });
  }

  it('every page keeps that plan once the partition is analyzed', async () => {
    await t.db.session((conn) => maintainTables(conn, { autovacuum: false }));
    const { rows } = await t.db.query('select 1 from pg_stats where tablename = $1 and attname = $2', [part, 'endpoint_id']);
    assert.equal(rows.length, 1, 'analyzed');
    for (const [, filters] of pages) {
      const plan = await planOf(filters());
      // With statistics that say every row is this endpoint's, walking the
      // primary key backwards is as good: both stop after the page.
      assert.match(plan, /Index Scan Backward using captured_requests_p\w+_(endpoint_id_id_idx|pkey)/, plan);
      assert.doesNotMatch(plan, /Sort\b(?! Key)|Bitmap|Seq Scan/, plan);
    }
  });
});

describe('the forward_url recovery check', () => {
  it('reads a range of the endpoint index bounded by the id floor, not the endpoint\'s whole delivery history', async () => {
    // 20,000 old succeeded deliveries of the forward_url: the history it must not walk
    await t.db.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, url, status, last_attempt_at)
       select ('00000000-' || lpad(to_hex(g), 4, '0') || '-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, $1::uuid,
              gen_random_uuid(), now(), $2::uuid, 'https', 'https://example.com/hook', 'succeeded', now() - interval '2 days'
         from generate_series(1, 20000) g`,
      [e.organization_id, e.id],
    );
    const since = new Date(Date.now() - 60_000);
    const { rows } = await t.db.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off) ${FORWARD_URL_SUCCEEDED_SINCE}`, [
      [e.id],
      'https://example.com/hook',
      idFloor(since.getTime() - 3_600_000),
      since.toISOString(),
    ]);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan, /Index Scan (using|on) deliveries_endpoint/, plan);
    // the id bound is part of the index condition, so none of the old rows is read
    assert.match(plan, /Index Cond: \(\(endpoint_id = ANY \(.*\)\) AND \(id >= .*\)\)/, plan);
    assert.doesNotMatch(plan, /Seq Scan/, plan);
    assert.doesNotMatch(plan, /Rows Removed by Filter: \d{3,}/, plan);
    assert.equal(await succeededSince(t.db, { forwardDestinationId: null, url: 'https://example.com/hook', endpointIds: [e.id] }, since), false);
  });
});
