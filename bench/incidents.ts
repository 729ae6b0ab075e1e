/**
 * Incidents benchmark (node --import tsx bench/incidents.ts). Prints ratios
 * against baselines measured in the same run, never pass/fail thresholds:
 *  (a) the delivery path: outcomes completed per second by the completion
 *      statement when they succeed (baseline: nothing recorded) and when
 *      they fail (each failure recorded for incidents in the same
 *      statement), claimed by the real claim statement;
 *  (b) correlation: a burst of BENCH_FAILURES failures correlated into
 *      their incident per second by the correlator, against (a)'s baseline;
 *  (c) paced replay: an incident replay at BENCH_REPLAY_RATE/min to a real
 *      HTTPS receiver on loopback, the rate measured from arrival times,
 *      and its error against the asked rate;
 *  (d) the completion statement's rate on failures while the correlator
 *      drains another burst at the same time, against (a). On PGlite (one
 *      connection) the two take turns; on PostgreSQL they run side by side.
 * The database is PGlite in memory, or a fresh PostgreSQL database beside
 * DATABASE_URL when it is set.
 * Env: BENCH_FAILURES (default 10000), BENCH_REPLAY_RATE (default 600), BENCH_REPLAY_SECONDS (default 20).
 */
import pino from 'pino';
import type { Db } from '../src/db/db.ts';
import { claimDeliveries } from '../src/delivery/claim.ts';
import { completeAttempts, type Outcome } from '../src/delivery/complete.ts';
import { HttpTransport } from '../src/delivery/http-transport.ts';
import { DeliveryWorker } from '../src/delivery/worker.ts';
import { correlateAll } from '../src/incidents/correlate.ts';
import { queueIncidentReplay } from '../src/incidents/replay.ts';
import { SYSTEM_ACTOR_ID } from '../src/incidents/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { openTestDb } from '../test/helpers/db.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination, type EndpointFixture } from '../test/helpers/fixtures.ts';
import { startReceiver, testCa } from '../test/helpers/https.ts';

const FAILURES = Number(process.env.BENCH_FAILURES ?? 10_000);
const REPLAY_RATE = Number(process.env.BENCH_REPLAY_RATE ?? 600);
const REPLAY_SECONDS = Number(process.env.BENCH_REPLAY_SECONDS ?? 20);
const BATCH = 256; // the CompletionBatcher's largest statement
const fmt = (n: number, d = 0) => n.toFixed(d);

// PGlite in memory, or a fresh PostgreSQL database beside DATABASE_URL (dropped at the end), migrated
const testDb = await openTestDb();
const db: Db = testDb.db;
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });

/** `n` captures queued to one new destination, as the ingest statement stores them. */
async function queue(n: number, url: string): Promise<EndpointFixture> {
  const ep = await insertEndpoint(db, org.id);
  await insertForwardDestination(db, ep, { url, retryEnabled: false });
  for (let i = 0; i < n; i += 1000) await insertCaptures(db, ep, Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ body: `{"i":${i + j}}` })));
  return ep;
}

/** Claims everything due and completes it with `status`, BATCH outcomes per statement; returns outcomes per second of completion. */
async function completeAll(statusCode: number): Promise<number> {
  let done = 0;
  let ms = 0;
  for (;;) {
    const { claimed } = await claimDeliveries(db, { destinationType: 'https', limit: BATCH, leaseMs: 600_000, node: 'bench' });
    if (claimed.length === 0) break;
    const ok = statusCode < 300;
    const outcomes: Outcome[] = claimed.map((d) => ({
      delivery: d,
      result: { startedAt: new Date(), durationMs: 3, url: d.url, statusCode, ...(ok ? {} : { errorClass: 'http_status' as const, errorMessage: `HTTP ${statusCode}` }) },
      decision: ok ? { status: 'succeeded' } : { status: 'failed', reason: `HTTP ${statusCode}; retries are disabled for this destination` },
    }));
    const t0 = performance.now();
    await completeAttempts(db, outcomes, 'bench');
    ms += performance.now() - t0;
    done += claimed.length;
  }
  return (done * 1000) / ms;
}

console.log(`database: ${db.kind}; ${FAILURES} outcomes per run`);
await queue(FAILURES, 'https://127.0.0.1:9/ok');
const successPerSec = await completeAll(200);
await queue(FAILURES, 'https://127.0.0.1:9/fail');
const failurePerSec = await completeAll(503);
const t0 = performance.now();
const correlated = await correlateAll(db);
const correlateMs = performance.now() - t0;
const correlatedPerSec = (correlated * 1000) / correlateMs;
const { rows: inc } = await db.query<{ failure_count: number }>(`select failure_count from incidents`);
console.log(`(a) completion statement: ${fmt(successPerSec)} successes/s (baseline), ${fmt(failurePerSec)} failures/s recorded for incidents: ratio ${fmt(failurePerSec / successPerSec, 2)}`);
console.log(
  `(b) correlation: ${correlated} failures into ${inc.length} incident (failure_count ${inc[0]?.failure_count}) in ${fmt(correlateMs)} ms = ${fmt(correlatedPerSec)} failures/s: ` +
    `${fmt(correlatedPerSec / successPerSec, 2)} of the completion baseline`,
);

// (d) the delivery path while the correlator drains a burst: no hot row, so completions go on
await queue(FAILURES, 'https://127.0.0.1:9/burst');
await completeAll(503);
await queue(FAILURES, 'https://127.0.0.1:9/during');
const [duringPerSec] = await Promise.all([completeAll(503), correlateAll(db)]);
console.log(`(d) completion while ${FAILURES} failures are being correlated: ${fmt(duringPerSec)} failures/s recorded: ${fmt(duringPerSec / failurePerSec, 2)} of (a)'s rate`);

// (c) paced replay against a real receiver
const n = Math.max(2, Math.round((REPLAY_RATE * REPLAY_SECONDS) / 60) + 1);
let failing = true;
const rx = await startReceiver({ reply: () => ({ status: failing ? 503 : 200 }) });
const ep = await queue(n, rx.url);
const worker = new DeliveryWorker({
  db,
  logger: pino({ level: 'silent' }),
  node: 'bench-worker',
  transport: new HttpTransport({ allowPrivate: true, connectTimeoutMs: 5_000, timeoutMs: 10_000, ca: testCa().ca }),
  concurrency: 32,
  leaseMs: 30_000,
  pollMs: 1_000,
});
await worker.start();
await rx.waitFor(n, 120_000);
for (;;) {
  const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from incident_failures where endpoint_id = $1::uuid`, [ep.id]);
  if (rows[0].n === n) break;
  await new Promise((r) => setTimeout(r, 50));
}
await correlateAll(db);
const { rows: target } = await db.query<{ id: string }>(`select incident_id as id from incident_failures where endpoint_id = $1::uuid limit 1`, [ep.id]);
failing = false;
const seen = rx.received.length;
const r = await queueIncidentReplay(db, { organizationId: org.id, incidentId: target[0].id, requestsPerMinute: REPLAY_RATE, memberId: SYSTEM_ACTOR_ID, plan: { name: 'business', incidentReplay: true } });
if (!r.ok) throw new Error(`replay refused: ${r.reason}`);
await rx.waitFor(seen + n, (REPLAY_SECONDS + 60) * 1000);
const at = rx.received.slice(seen).map((x) => x.at).sort((a, b) => a - b);
const rate = ((at.length - 1) * 60_000) / (at[at.length - 1] - at[0]);
console.log(`(c) paced replay: ${n} requests asked at ${REPLAY_RATE}/min arrived at ${fmt(rate, 2)}/min: error ${fmt((Math.abs(rate - REPLAY_RATE) / REPLAY_RATE) * 100, 2)} %`);

await worker.stop(0);
await rx.close();
await testDb.close();
