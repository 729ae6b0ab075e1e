/**
 * The two-node rate limit (npm run bench:rate-limit): how close a
 * destination with rate_limit_per_minute R, served by two `weir serve`
 * processes on one PostgreSQL database, stays to R arrivals a minute at
 * the receiver. Prints ratios, no pass/fail thresholds:
 *  - the most arrivals in any sliding 60 s window ÷ R, and in any 10 s
 *    window ÷ (R / 6) (windows half-open, so perfect spacing gives 1.00);
 *  - the gaps between consecutive arrivals, p1 and p50, ÷ the interval 60 s / R;
 *  - when each delivery arrived against the slot the database gave it
 *    (arrival − slot, both this machine's clock): negative is early.
 * Two variants, each on its own destination:
 *  (backlog)  more than the run's worth of captures queued at once;
 *  (arriving) captures keep arriving at 1.5 × R, starting from idle;
 *  (stall)    the backlog, with both nodes stopped (SIGSTOP) for
 *             BENCH_STALL_MS 8 s in, as a paused VM, a long GC or
 *             a starved machine stops them: what is due meanwhile is late.
 * Captures are written the way the ingest batcher writes them
 * (storeCaptures), from this process; the nodes hear them by NOTIFY. The
 * receiver (bench/forward-receiver.ts) runs in its own process and records
 * each webhook-id's arrival time.
 * Env: DATABASE_URL (required: two processes share the database),
 * BENCH_RATE (default 600 a minute), BENCH_SECONDS (default 75, so a whole
 * 60 s window exists), BENCH_VARIANTS (default "backlog,arriving,stall"),
 * BENCH_STALL_MS (default 2000),
 * BENCH_CONCURRENCY (WEIR_DELIVERY_CONCURRENCY of each node, default 32).
 */
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { migrate } from '../src/db/migrate.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { createFreshDatabase } from '../test/helpers/db.ts';
import { insertEndpoint, insertForwardDestination } from '../test/helpers/fixtures.ts';
import { testCa } from '../test/helpers/https.ts';
import { benchCaptures } from './forward-load.ts';
import { child, waitFor } from './weir-process.ts';

if (!process.env.DATABASE_URL) throw new Error('bench:rate-limit needs DATABASE_URL (two weir processes share one PostgreSQL database)');
const RATE = Number(process.env.BENCH_RATE ?? 600);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 75);
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'backlog,arriving,stall').split(',');
const CONCURRENCY = process.env.BENCH_CONCURRENCY ?? '32';
const STALL_MS = Number(process.env.BENCH_STALL_MS ?? 2000);
const INTERVAL_MS = 60_000 / RATE;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** The most of the sorted times `at` within any half-open window [t, t + ms). */
export function maxInWindow(at: readonly number[], ms: number): number {
  let most = 0;
  for (let i = 0, j = 0; j < at.length; j++) {
    while (at[j] - at[i] >= ms) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

// --- the receiver (its own process) ---------------------------------------
const receiver = fork(new URL('./forward-receiver.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
const port = await new Promise<number>((resolve) => receiver.once('message', (m: any) => resolve(m.port)));
const target = `https://127.0.0.1:${port}/hook`;
function arrivals(): Promise<Map<string, number>> {
  return new Promise((resolve) => {
    receiver.once('message', (m: any) => resolve(new Map(m.arrivals)));
    receiver.send('report');
  });
}

// --- the database and the two nodes -------------------------------------------
const fresh = await createFreshDatabase();
const db = await openPostgres(fresh.url, { poolSize: 4 });
await migrate(db);
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });

const nodeEnv: Record<string, string | undefined> = {};
for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('WEIR_') && k !== 'DATABASE_URL') nodeEnv[k] = v;
Object.assign(nodeEnv, {
  DATABASE_URL: fresh.url,
  WEIR_API_PORT: '0',
  WEIR_INGEST_PORT: '0',
  WEIR_LOG_LEVEL: 'warn',
  WEIR_ALLOW_PRIVATE_DESTINATIONS: '1',
  WEIR_DELIVERY_CONCURRENCY: CONCURRENCY,
  NODE_EXTRA_CA_CERTS: testCa().caFile,
});
const nodes = [child(['bin/weir.mjs', 'serve'], nodeEnv), child(['bin/weir.mjs', 'serve'], nodeEnv)];
for (const [i, n] of nodes.entries()) {
  await waitFor(() => {
    if (n.proc.exitCode !== null) throw new Error(`node ${i + 1} exited:\n${n.output()}`);
    return /Ingest: .*\(port \d+\)/.test(n.output()) || undefined;
  }, `node ${i + 1} to start`);
}

/** `n` captures to `endpoint` in one capture statement, as the ingest batcher stores a group. */
async function capture(endpoint: { id: string }, n: number): Promise<string[]> {
  const caps = benchCaptures(org.id, endpoint.id, n);
  const outcomes = await storeCaptures(db, caps);
  if (outcomes.some((o) => o !== 'stored')) throw new Error(`captures not stored: ${[...new Set(outcomes)].join(', ')}`);
  return caps.map((c) => c.id);
}

/** Each capture's slot (paced_slot while it waits or is in flight; cleared when it completes), read as the run goes. */
async function readSlots(destinationId: string, into: Map<string, number>): Promise<void> {
  const { rows } = await db.query<{ request_id: string; paced_slot: Date }>(
    `select request_id, paced_slot from deliveries where forward_destination_id = $1 and paced_slot is not null`,
    [destinationId],
  );
  for (const r of rows) into.set(r.request_id, new Date(r.paced_slot).getTime());
}

interface Outcome {
  arrivals: number;
  minute: number;
  tenSeconds: number;
  gapP1: number;
  gapP50: number;
  late: { p1: number; p50: number; p99: number; max: number; min: number; slotted: number };
}

async function runVariant(name: string): Promise<Outcome> {
  const endpoint = await insertEndpoint(db, org.id, {});
  const dest = await insertForwardDestination(db, endpoint, { url: target, rateLimitPerMinute: RATE });
  await arrivals(); // forget anything earlier
  const ids: string[] = [];
  const slots = new Map<string, number>();
  const started = now();
  let feeding: Promise<void> = Promise.resolve();
  if (name === 'backlog' || name === 'stall') {
    // the whole run's worth and a margin, so the queue never runs dry
    const backlog = Math.ceil((RATE * (SECONDS + 20)) / 60);
    for (let done = 0; done < backlog; done += 500) ids.push(...(await capture(endpoint, Math.min(500, backlog - done))));
  } else {
    // 1.5 × the rate, a group every 200 ms, for the whole run
    feeding = (async () => {
      const perGroup = (1.5 * RATE * 0.2) / 60;
      let owed = 0;
      for (let k = 0; now() - started < SECONDS * 1000; k++) {
        owed += perGroup;
        const n = Math.floor(owed);
        owed -= n;
        if (n > 0) ids.push(...(await capture(endpoint, n)));
        await sleep(Math.max(0, started + (k + 1) * 200 - now()));
      }
    })();
  }
  let stalled = name !== 'stall';
  while (now() - started < SECONDS * 1000) {
    await readSlots(dest.id, slots);
    // early, so a whole minute after the stall is measured: a window that starts with the catch-up
    if (!stalled && now() - started >= 8000) {
      stalled = true;
      for (const n of nodes) n.proc.kill('SIGSTOP');
      await sleep(STALL_MS);
      for (const n of nodes) n.proc.kill('SIGCONT');
    }
    await sleep(1000);
  }
  await feeding;
  const got = await arrivals();
  // stop the rest: what waits is deleted, what a node holds in memory arrives after this run's report
  await db.query(`delete from deliveries where forward_destination_id = $1 and status = 'pending'`, [dest.id]);
  await sleep(2000);
  await arrivals();

  const mine = new Set(ids.map((id) => `msg_${id}`));
  const at = [...got].filter(([id]) => mine.has(id)).map(([, t]) => t).sort((a, b) => a - b);
  const gaps = at.slice(1).map((t, i) => t - at[i]);
  const late = [...got].filter(([id]) => slots.has(id.slice(4))).map(([id, t]) => t - slots.get(id.slice(4))!);
  return {
    arrivals: at.length,
    minute: maxInWindow(at, 60_000) / RATE,
    tenSeconds: maxInWindow(at, 10_000) / (RATE / 6),
    gapP1: percentile(gaps, 1) / INTERVAL_MS,
    gapP50: percentile(gaps, 50) / INTERVAL_MS,
    late: { p1: percentile(late, 1), p50: percentile(late, 50), p99: percentile(late, 99), max: percentile(late, 100), min: percentile(late, 0), slotted: late.length },
  };
}

console.log(
  `rate-limit benchmark: two weir nodes on PostgreSQL, one destination at ${RATE}/min (${INTERVAL_MS.toFixed(1)} ms apart), ` +
    `${SECONDS} s a variant, concurrency ${CONCURRENCY} a node, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`,
);
try {
  for (const v of VARIANTS) {
    const o = await runVariant(v);
    console.log(
      `(${v}) ${o.arrivals} arrivals in ${SECONDS} s (load ${loadavg()[0].toFixed(1)}): max in any 60 s ÷ rate ${o.minute.toFixed(3)}, ` +
        `max in any 10 s ÷ (rate/6) ${o.tenSeconds.toFixed(3)}; gaps ÷ interval p1 ${o.gapP1.toFixed(2)} p50 ${o.gapP50.toFixed(2)}; ` +
        `arrival − slot ms (${o.late.slotted} slotted) min ${o.late.min.toFixed(1)} p1 ${o.late.p1.toFixed(1)} p50 ${o.late.p50.toFixed(1)} p99 ${o.late.p99.toFixed(1)} max ${o.late.max.toFixed(1)}`,
    );
  }
} finally {
  for (const n of nodes) n.proc.kill('SIGTERM');
  await Promise.all(nodes.map((n) => n.exited));
  receiver.send('exit');
  await db.close();
  await fresh.drop();
}
