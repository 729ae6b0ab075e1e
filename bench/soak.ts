/**
 * Soak benchmark (npm run bench:soak): does Weir stay as fast after a million
 * captures as after the first hundred thousand? Captures (groups of 100, the
 * ingest's capture statement) and forwards them (the real delivery worker,
 * one https destination in its own process) continuously until
 * SOAK_CAPTURES are stored, and samples throughout:
 *  - the capture page: the newest page and one 1,000 pages deep (25 a page);
 *  - the delivery claim: one claim of 32 at the live backlog (given back);
 *  - the database's growth per stored capture, and the deliveries' dead rows;
 *  - the longest capture group store in each window (a stall shows there).
 * Prints each measure's ratio last tenth ÷ first tenth of the samples (goal:
 * ≤ 1.5 for latencies; bytes per capture flat), never a pass/fail on time.
 * Weir's table maintenance and (PGlite) checkpoints run as in a server.
 * Capturing is throttled to what forwarding drains (at most SOAK_BACKLOG
 * waiting), so the queue stays a queue, not a pile.
 *
 * The database: PGlite on disk in a temporary folder, or a fresh PostgreSQL
 * database beside DATABASE_URL when it is set.
 * Env: SOAK_CAPTURES (default 1000000), SOAK_SAMPLES (default 40),
 * SOAK_WARMUP (captures before sampling starts; default a tenth, at most 20000),
 * SOAK_BACKLOG (default 5000), WEIR_PGLITE_FSYNC (1: PGlite flushes commits).
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Db } from '../src/db/db.ts';
import { newId } from '../src/db/ids.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { startTableMaintenance } from '../src/db/table-maintenance.ts';
import { claimDeliveries, releaseLeases } from '../src/delivery/claim.ts';
import { loadConfig } from '../src/config.ts';
import { HttpTransport } from '../src/delivery/http-transport.ts';
import { deliveryQueueFor } from '../src/delivery/start.ts';
import { DeliveryWorker } from '../src/delivery/worker.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { idTime } from '../src/requests/capture-ids.ts';
import { listCaptures, type Capture } from '../src/requests/captures.ts';
import { maintainPartitions } from '../src/requests/partitions.ts';
import { createFreshDatabase } from '../test/helpers/db.ts';
import { insertEndpoint } from '../test/helpers/fixtures.ts';
import { testCa } from '../test/helpers/https.ts';
import { keptOpen } from './forward-load.ts';
import { median } from './stats.ts';

const CAPTURES = Number(process.env.SOAK_CAPTURES ?? 1_000_000);
const SAMPLES = Number(process.env.SOAK_SAMPLES ?? 40);
// Captured before sampling starts (not counted in SOAK_CAPTURES): JIT, caches
// and connections settle, so the first tenth measures Weir, not start-up.
const WARMUP = Number(process.env.SOAK_WARMUP ?? Math.min(20_000, Math.floor(CAPTURES / 10)));
const BACKLOG = Number(process.env.SOAK_BACKLOG ?? 5_000);
const GROUP = 100;
const PAGE = 25;
const DEEP = 1_000 * PAGE;
const BODY = Buffer.from(JSON.stringify({ id: 'evt_soak', type: 'charge.succeeded', data: { object: { amount: 2000, currency: 'usd', pad: 'x'.repeat(800) } } }));
const HEADERS: Array<[string, string]> = [
  ['Content-Type', 'application/json'],
  ['User-Agent', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)'],
];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const receiver = fork(new URL('./forward-receiver.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
// An interrupted soak prints what it sampled so far (a run cut short by a
// deadline still says something) and leaves no receiver running.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    summarize(`interrupted by ${signal} at ${ids.length} captures`);
    receiver.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  });
}
const port = await new Promise<number>((resolve) => receiver.once('message', (m: any) => resolve(m.port)));
/** Empties the receiver's memory of arrivals (a million would not fit an IPC message). */
const drainReceiver = () =>
  new Promise<number>((resolve) => {
    receiver.once('message', (m: any) => resolve(m.arrivals.length));
    receiver.send('report');
  });

let db: Db;
// What samples the page and claim: on PostgreSQL a connection pool of its
// own, so a sample measures the statement, not a wait for one of the ten
// connections the 32 forwards keep busy; PGlite has one connection anyway.
let sampler: Db;
let cleanup = async () => {};
let dir: string | undefined;
if (process.env.DATABASE_URL) {
  const fresh = await createFreshDatabase();
  db = await openPostgres(fresh.url, { poolSize: 10 });
  sampler = await openPostgres(fresh.url, { poolSize: 2 });
  cleanup = async () => {
    await sampler.close();
    await fresh.drop();
  };
} else {
  dir = mkdtempSync(join(tmpdir(), 'weir-soak-'));
  db = await openPglite(dir, { fsync: process.env.WEIR_PGLITE_FSYNC === '1' });
  sampler = db;
  cleanup = async () => rmSync(dir!, { recursive: true, force: true });
}
await migrate(db);
await maintainPartitions(db, Date.now(), 30, 1);
const org = await createOrganization(db, { name: 'Soak', plan: 'business', region: 'us' });
const endpoint = await insertEndpoint(db, org.id, { forwardUrl: `https://127.0.0.1:${port}/hook` });

const steps: { table: string; action: string; ms: number }[] = [];
const maintenanceLog = {
  info: (o: any) => void (o?.ms !== undefined && steps.push({ table: o.table, action: o.action, ms: o.ms })),
  warn: (...a: unknown[]) => console.warn(...a),
  error: (...a: unknown[]) => console.error(...a),
};
const maintenance = await startTableMaintenance(db, maintenanceLog as never);
const dbSize = async () => (await db.query<{ size: number }>('select pg_database_size(current_database())::float8 as size')).rows[0].size;
// The empty schema's own size, so bytes per capture is what captures add.
const baseSize = await dbSize();

const http = new HttpTransport({ allowPrivate: true, connectTimeoutMs: 10_000, timeoutMs: 30_000, ca: testCa().ca });
let settled = 0;
const worker = new DeliveryWorker({
  db,
  logger: pino({ level: 'warn' }),
  node: 'soak',
  transport: keptOpen(http),
  concurrency: 32,
  // as startDelivery runs it (claim-ahead, the unrecorded limit)
  ...deliveryQueueFor(db, { leaseMs: 60_000, forwardTimeoutMs: 30_000, concurrency: 32, holdBytes: loadConfig({}).deliveryHoldBytes }),
  leaseMs: 60_000,
  pollMs: 5_000,
  onSettled: () => settled++,
});
await worker.start();

// The stall: the longest a trivial query waits, probed every 10 ms (on
// PGlite an analyze or vacuum holds up every query, captures included).
let worstWait = 0;
let probing = true;
// PGlite runs a statement synchronously on this thread, so a long one also
// freezes the event loop: the probe's timer then fires late and its own
// query is quick. Measured from when the probe was due, a freeze counts too.
const probe = (async () => {
  while (probing) {
    const due = performance.now() + 10;
    await sleep(10);
    await db.query('select 1');
    worstWait = Math.max(worstWait, performance.now() - due);
  }
})();

const ids: string[] = [];
async function captureGroup(): Promise<number> {
  const caps: Capture[] = [];
  for (let i = 0; i < GROUP; i++) {
    const id = newId();
    caps.push({ id, organization_id: org.id, endpoint_id: endpoint.id, received_at: new Date(idTime(id)), method: 'POST', path: '', query: '', headers: HEADERS, body: BODY, body_size: BODY.length, content_type: 'application/json', source_ip: null });
  }
  const started = performance.now();
  const outcomes = await storeCaptures(db, caps);
  const ms = performance.now() - started;
  if (outcomes.some((o) => o !== 'stored')) throw new Error(`capture group not stored: ${[...new Set(outcomes)].join(', ')}`);
  for (const c of caps) ids.push(c.id);
  return ms;
}

/**
 * The fastest of `runs`: on a shared machine a run is often delayed by
 * someone else's work, which would hide or fake a trend; a plan that went
 * bad (a sort of every capture) is slow in every run.
 */
async function timed(fn: () => Promise<unknown>, runs = 5): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    ms.push(performance.now() - started);
  }
  return Math.min(...ms);
}

interface Sample {
  captures: number;
  newestMs: number;
  deepMs: number;
  claimMs: number;
  claimPages: number;
  bytesPerCapture: number;
  deadDeliveries: number;
  backlog: number;
  worstGroupMs: number;
  worstWaitMs: number;
}

async function sample(worstGroupMs: number): Promise<Sample> {
  const n = ids.length;
  const deepCursor = ids[Math.max(0, n - DEEP)];
  const newestMs = await timed(() => listCaptures(sampler, org.id, endpoint.id, { limit: PAGE }));
  const deepMs = await timed(() => listCaptures(sampler, org.id, endpoint.id, { limit: PAGE, before: deepCursor }));
  const claimMs = await timed(async () => {
    const { claimed } = await claimDeliveries(sampler, { destinationType: 'https', limit: 32, leaseMs: 60_000, node: 'soak-sampler' });
    await releaseLeases(sampler, claimed.map((c) => c.leaseId));
  });
  // The claim's work without the noise of time: pages its ordered walk of
  // deliveries_due reads to find 32 due rows. Entries of rows claimed since
  // the last vacuum are still in the index, ahead of the due ones.
  const claimPages = await sampler.transaction(async (tx) => {
    await tx.exec('set local enable_seqscan = off; set local enable_bitmapscan = off');
    const { rows } = await tx.query<{ 'QUERY PLAN': any }>(
      `explain (analyze, buffers, format json) select id from deliveries
        where status = 'pending' and next_attempt_at <= now() and destination_type = 'https' order by next_attempt_at limit 32`,
    );
    const plan = (typeof rows[0]['QUERY PLAN'] === 'string' ? JSON.parse(rows[0]['QUERY PLAN']) : rows[0]['QUERY PLAN'])[0].Plan;
    return Number(plan['Shared Hit Blocks'] ?? 0) + Number(plan['Shared Read Blocks'] ?? 0);
  });
  await db.query('select pg_stat_force_next_flush()');
  const { rows } = await db.query<{ dead: number }>(`select n_dead_tup::float8 as dead from pg_stat_user_tables where relname = 'deliveries'`);
  const bytesPerCapture = ((await dbSize()) - baseSize) / n;
  const worstWaitMs = worstWait;
  worstWait = 0;
  return { captures: n, newestMs, deepMs, claimMs, claimPages, bytesPerCapture, deadDeliveries: rows[0].dead, backlog: n - settled, worstGroupMs, worstWaitMs };
}

console.log(`soak on ${db.kind}${db.kind === 'pglite' ? ` (on disk, fsync ${process.env.WEIR_PGLITE_FSYNC === '1' ? 'on' : 'off'})` : ''}: ${CAPTURES} captures after ${WARMUP} of warm-up, one https destination, ${SAMPLES} samples`);
while (ids.length < WARMUP) {
  if (ids.length - settled >= BACKLOG) await sleep(5);
  else await captureGroup();
}
const samples: Sample[] = [];
const every = Math.max(GROUP, Math.floor(CAPTURES / SAMPLES));
const started = performance.now();
let worst = 0;
let nextSample = ids.length + every;
while (ids.length < CAPTURES + WARMUP) {
  if (ids.length - settled >= BACKLOG) {
    await sleep(5);
    continue;
  }
  worst = Math.max(worst, await captureGroup());
  if (ids.length >= nextSample) {
    const s = await sample(worst);
    samples.push(s);
    worst = 0;
    nextSample += every;
    await drainReceiver();
    console.log(
      `${String(s.captures).padStart(8)} captures, ${((performance.now() - started) / 1000).toFixed(0)} s: page newest ${s.newestMs.toFixed(2)} ms, ` +
        `1,000 deep ${s.deepMs.toFixed(2)} ms, claim ${s.claimMs.toFixed(2)} ms (${s.claimPages} pages), ${(s.bytesPerCapture / 1024).toFixed(2)} KiB/capture, ` +
        `dead deliveries ${s.deadDeliveries}, backlog ${s.backlog}, slowest group ${s.worstGroupMs.toFixed(0)} ms, longest wait ${s.worstWaitMs.toFixed(0)} ms`,
    );
  }
}
while (settled < ids.length) await sleep(20);
probing = false;
await probe;
const seconds = (performance.now() - started) / 1000;
await worker.stop();
await maintenance.stop();

summarize(`${ids.length} captures forwarded in ${seconds.toFixed(0)} s (${(ids.length / seconds).toFixed(0)}/s)`);

receiver.send('exit');
await http.close();
await db.close();
await cleanup();

/** Prints each measure's last tenth ÷ first tenth, and the longest maintenance steps. */
function summarize(headline: string): void {
  const tenth = Math.max(1, Math.floor(samples.length / 10));
  const ratio = (key: keyof Sample) => {
    const first = median(samples.slice(0, tenth).map((s) => s[key]));
    const last = median(samples.slice(-tenth).map((s) => s[key]));
    return { first, last, ratio: last / first };
  };
  if (samples.length === 0) {
    console.log(`\n${headline}: no samples yet`);
    return;
  }
  console.log(`\n${headline}; last tenth ÷ first tenth of ${samples.length} samples (medians of ${tenth}):`);
  for (const [label, key, unit] of [
    ['capture page, newest', 'newestMs', 'ms'],
    ['capture page, 1,000 pages deep', 'deepMs', 'ms'],
    ['delivery claim of 32', 'claimMs', 'ms'],
    ['pages the claim reads', 'claimPages', ''],
    ['database bytes per capture', 'bytesPerCapture', 'B'],
    ['deliveries dead rows', 'deadDeliveries', ''],
    ['slowest capture group', 'worstGroupMs', 'ms'],
    ['longest wait of a select 1', 'worstWaitMs', 'ms'],
  ] as const) {
    const r = ratio(key);
    console.log(`  ${label.padEnd(32)} ${r.first.toFixed(2)} → ${r.last.toFixed(2)} ${unit}: ratio ${r.ratio.toFixed(2)}`);
  }
  const longest = [...steps].sort((a, b) => b.ms - a.ms).slice(0, 5);
  console.log(`table maintenance: ${steps.length} steps; longest ${longest.map((s) => `${s.action} ${s.table} ${s.ms} ms`).join(', ') || 'none'}`);
}
