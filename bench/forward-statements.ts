/**
 * What the two statements of a forward cost, without HTTP
 * (docs/forwarding.md, Performance): queues BENCH_FORWARDS captures
 * (default 6000) the way the ingest batcher does, then claims them
 * BENCH_BATCH at a time (default 16, what a busy worker claims) and records
 * each batch as succeeded, as a worker would after the forwards answered.
 * Prints the CPU time a forward costs in each statement: this process's
 * (on PGlite the database runs on this thread) plus, on PostgreSQL, the
 * server backends'. CPU time, not wall time, so other work on the machine
 * moves the figures little. BENCH_CYCLES rounds (default 3), median shown.
 *
 *   npm run bench:forward-statements
 *   DATABASE_URL=postgres://root@127.0.0.1:5432/postgres npm run bench:forward-statements
 */
import { claimDeliveries } from '../src/delivery/claim.ts';
import { completeAttempts, type Outcome } from '../src/delivery/complete.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { insertEndpoint } from '../test/helpers/fixtures.ts';
import { openBenchDb } from './bench-db.ts';
import { benchCaptures } from './forward-load.ts';
import { cpuNow, cpuSince } from './forward-measure.ts';
import { median } from './stats.ts';

const FORWARDS = Number(process.env.BENCH_FORWARDS ?? 6000);
const BATCH = Number(process.env.BENCH_BATCH ?? 16);
const CYCLES = Number(process.env.BENCH_CYCLES ?? 3);

const { db, drop } = await openBenchDb();
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
const endpoint = await insertEndpoint(db, org.id, { forwardUrl: 'https://127.0.0.1:9/hook' });

async function queue(n: number): Promise<void> {
  for (let done = 0; done < n; done += 500) {
    await storeCaptures(db, benchCaptures(org.id, endpoint.id, Math.min(500, n - done)));
  }
}

const fmt = (n: number) => n.toFixed(0);
const claimCost: number[] = [];
const completeCost: number[] = [];
for (let cycle = 0; cycle < CYCLES; cycle++) {
  await queue(FORWARDS);
  let claimMs = 0;
  let completeMs = 0;
  let forwards = 0;
  for (;;) {
    let t = await cpuNow(db);
    const { claimed } = await claimDeliveries(db, { destinationType: 'https', limit: BATCH, leaseMs: 60_000, node: 'bench' });
    let c = await cpuSince(db, t);
    claimMs += c.processMs + c.serverMs;
    if (claimed.length === 0) break;
    const outcomes: Outcome[] = claimed.map((d) => ({
      delivery: d,
      result: { startedAt: new Date(), durationMs: 2, url: d.url!, statusCode: 200, responseHeaders: [['content-length', '2']], responseBody: Buffer.from('ok'), responseTruncated: false },
      decision: { status: 'succeeded' },
    })) as Outcome[];
    t = await cpuNow(db);
    const owned = await completeAttempts(db, outcomes, 'bench');
    c = await cpuSince(db, t);
    completeMs += c.processMs + c.serverMs;
    if (owned.size !== claimed.length) throw new Error(`recorded ${owned.size} of ${claimed.length}`);
    forwards += claimed.length;
  }
  claimCost.push((claimMs * 1000) / forwards);
  completeCost.push((completeMs * 1000) / forwards);
  console.log(`${db.kind} cycle ${cycle + 1}: ${forwards} forwards in batches of ${BATCH}: claim ${fmt(claimCost.at(-1)!)} µs CPU a forward, completion ${fmt(completeCost.at(-1)!)} µs`);
}
console.log(`${db.kind} median of ${CYCLES}: claim ${fmt(median(claimCost))} µs CPU a forward, completion ${fmt(median(completeCost))} µs, together ${fmt(median(claimCost) + median(completeCost))} µs`);
await db.close();
await drop();
