/**
 * Capture page benchmark (npm run bench:capture-page), issue 28 item 5: what
 * the delivery summary costs a page of the captures list, deep in a large
 * endpoint. One endpoint with BENCH_CAPTURES captures (default 50,000), each
 * forwarded to two destinations (95 % delivered, 3 % retrying, 2 % failed),
 * on PGlite in memory or a fresh PostgreSQL database (DATABASE_URL). Each
 * round, in alternating order, times the page 1,000 pages deep (25 a page):
 *   before: the page statement alone (what GET .../requests ran before);
 *   after:  the page and its delivery summaries in one statement (what it runs now);
 *   after, 2 queries: the page, then the summaries in a second query (the design not taken);
 *   filter failed / retrying: the deep page with ?delivery_status=, which
 *     probes each capture it walks past (about 1 / share-of-matches of them).
 * Prints medians and each against `before` from the same run.
 * Env: BENCH_CAPTURES, BENCH_ROUNDS (default 15).
 */
import { performance } from 'node:perf_hooks';
import { deliverySummaries } from '../src/delivery/summary.ts';
import { listCaptures, listCapturesWithDelivery, type CaptureFilters } from '../src/requests/captures.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { bulkCaptures } from '../test/helpers/bulk.ts';
import { insertEndpoint } from '../test/helpers/fixtures.ts';
import { openBenchDb } from './bench-db.ts';
import { median } from './stats.ts';

const N = Number(process.env.BENCH_CAPTURES ?? 50_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const PAGE = 25;
const DEPTH = Math.min(1000, Math.floor(N / PAGE) - 10);

const { db, drop } = await openBenchDb();
const org = await createOrganization(db, { name: 'bench', plan: 'business', region: 'us' });
const ep = await insertEndpoint(db, org.id);
const start = Date.now() - N - 60_000;
for (let done = 0; done < N; done += 10_000) await bulkCaptures(db, ep, Math.min(10_000, N - done), start, done);
// two destinations per capture, as the capture statement queues them (the forward_url's shape: url, no destination row)
await db.query(
  `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, url, status, attempt_count)
   select gen_random_uuid(), c.organization_id, c.id, c.received_at, c.endpoint_id, 'https', u.url,
          case when u.n = 1 or h >= 5 then 'succeeded' when h < 2 then 'dead' else 'pending' end,
          case when u.n = 1 or h >= 5 then 1 when h < 2 then 8 else 2 end
     from (select *, abs(hashtext(id::text)) % 100 as h from captured_requests where endpoint_id = $1::uuid) c
     cross join (values (1, 'https://a.example/hook'), (2, 'https://b.example/hook')) as u(n, url)`,
  [ep.id],
);
await db.query('analyze deliveries');
const { rows: cursorRows } = await db.query<{ id: string }>(
  `select id from captured_requests where endpoint_id = $1::uuid order by id desc offset $2 limit 1`,
  [ep.id, DEPTH * PAGE - 1],
);
const before = cursorRows[0].id;

const base: CaptureFilters = { limit: PAGE, before };
const cases: Record<string, () => Promise<unknown>> = {
  before: () => listCaptures(db, org.id, ep.id, base),
  'after, 2 queries': async () => {
    const rows = await listCaptures(db, org.id, ep.id, base);
    return deliverySummaries(db, org.id, rows.slice(0, PAGE).map((r) => r.id));
  },
  after: () => listCapturesWithDelivery(db, org.id, ep.id, base),
  'filter failed': () => listCapturesWithDelivery(db, org.id, ep.id, { ...base, deliveryStatus: 'failed' }),
  'filter retrying': () => listCapturesWithDelivery(db, org.id, ep.id, { ...base, deliveryStatus: 'retrying' }),
};
const names = Object.keys(cases);
const times = new Map(names.map((n) => [n, [] as number[]]));
for (const n of names) await cases[n]();
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const n of order) {
    const t0 = performance.now();
    await cases[n]();
    times.get(n)!.push(performance.now() - t0);
  }
}
const baseline = median(times.get('before')!);
console.log(`${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}: ${N} captures, page ${DEPTH} (${PAGE} a page), ${ROUNDS} rounds`);
for (const n of names) {
  const m = median(times.get(n)!);
  console.log(`${n.padEnd(16)} ${m.toFixed(2).padStart(8)} ms  ${(m / baseline).toFixed(2)} x before`);
}
await db.close();
await drop();
