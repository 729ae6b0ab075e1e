/**
 * Events benchmark (npm run bench:events). Prints figures and ratios
 * measured in the same run, never pass/fail thresholds:
 *  (a) capture → subscriber latency, p50/p99, with 1, 100, 1,000 and
 *      10,000 request.captured subscriptions (100 per organization): one
 *      capture per organization, stored by the capture statement, turned
 *      into events by the producer (woken by its NOTIFY), sent by one event
 *      worker to a real HTTPS receiver on loopback;
 *  (b) ingest throughput (the capture statement, groups of 100) for an
 *      organization with 1,000 capture subscriptions ÷ one with none,
 *      alternated A/B rounds; the producer does not run meanwhile (its
 *      fan-out is (a)'s);
 *  (c) the live tail: a real `weir serve` saturated by HTTP webhooks while a
 *      client follows its stream over HTTP: captures/s the client is
 *      handed ÷ captures/s acknowledged, what it never saw, and the lag
 *      from receipt to the client (bench/tail-http.ts); then the tail's
 *      hub alone, in this process, against the capture statement run in a
 *      loop, faster than HTTP ingest can store (what the hub can push);
 *  (d) this process's CPU while 1,000 subscriptions are idle but one event
 *      is in flight (its target never answers).
 * The database is PGlite in memory, or a fresh PostgreSQL database beside
 * DATABASE_URL when it is set.
 * Env: BENCH_SUBS (default 1,100,1000,10000), BENCH_INGEST_SECONDS (default 5),
 *      BENCH_TAIL_SECONDS (default 5), BENCH_IDLE_SECONDS (default 30).
 */
import pino from 'pino';
import type { Db } from '../src/db/db.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import type { CaptureSummary } from '../src/requests/captures.ts';
import { TailHub } from '../src/requests/tail.ts';
import { drainCaptureOutbox } from '../src/subscriptions/capture-events.ts';
import { CAPTURES_CHANNEL } from '../src/subscriptions/emit.ts';
import { EventWorker } from '../src/subscriptions/event-worker.ts';
import { createSubscription } from '../src/subscriptions/subscriptions.ts';
import { WakeableSleep } from '../src/delivery/wake-sleep.ts';
import { openTestDb } from '../test/helpers/db.ts';
import { testTransport } from '../test/delivery/helpers.ts';
import { captureOf, insertEndpoint, type EndpointFixture } from '../test/helpers/fixtures.ts';
import { startReceiver } from '../test/helpers/https.ts';
import { tailUnderHttpIngest } from './tail-http.ts';

const SUBS = (process.env.BENCH_SUBS ?? '1,100,1000,10000').split(',').map(Number);
const INGEST_SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? 5);
const TAIL_SECONDS = Number(process.env.BENCH_TAIL_SECONDS ?? 5);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const silent = pino({ level: 'silent' });
const fmt = (n: number, d = 0) => n.toFixed(d);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const now = () => performance.timeOrigin + performance.now();

const testDb = await openTestDb();
const db: Db = testDb.db;
console.log(`events benchmark on ${db.kind}; machine load ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`);

/** The request.captured producer as a node runs it: woken by the capture statement's NOTIFY, and every second. */
function startProducer(): { stop(): Promise<void> } {
  const sleeper = new WakeableSleep();
  let stopped = false;
  const listening = db.listen(CAPTURES_CHANNEL, () => sleeper.wake());
  const loop = (async () => {
    while (!stopped) {
      sleeper.clear();
      await drainCaptureOutbox(db);
      await sleeper.sleep(Date.now() + 1000);
    }
  })();
  return {
    async stop() {
      stopped = true;
      sleeper.wake();
      await loop;
      await (await listening)();
    },
  };
}

async function orgWithSubscriptions(n: number, url: string): Promise<EndpointFixture> {
  const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
  const ep = await insertEndpoint(db, org.id);
  for (let i = 0; i < n; i++) {
    const r = await createSubscription(db, { organizationId: org.id, targetUrl: url, eventTypes: ['request.captured'], createdBy: null });
    if (!r.ok) throw new Error('subscription refused');
  }
  return ep;
}

// (a) latency
{
  console.log('\n(a) capture → subscriber latency');
  for (const total of SUBS) {
    const receiver = await startReceiver();
    const perOrg = Math.min(100, total);
    const endpoints: EndpointFixture[] = [];
    for (let i = 0; i < total; i += perOrg) endpoints.push(await orgWithSubscriptions(Math.min(perOrg, total - i), receiver.url));
    const worker = new EventWorker({ db, transport: testTransport({ allowPrivate: true }), logger: silent, concurrency: 16, leaseMs: 60_000, pollMs: 5_000 });
    await worker.start();
    const producer = startProducer();
    // one capture per organization (several for a single subscription, for a distribution)
    const rounds = total === 1 ? 20 : 1;
    const storedAt = new Map<string, number>();
    for (let r = 0; r < rounds; r++) {
      for (const ep of endpoints) {
        const c = captureOf(ep, { body: `{"r":${r}}` });
        await storeCaptures(db, [c]);
        storedAt.set(`evt-of-${c.id}`, now());
      }
      if (rounds > 1) await new Promise((res) => setTimeout(res, 50));
    }
    const expected = total * rounds;
    const started = now();
    await receiver.waitFor(expected, 600_000);
    const lat = receiver.received.map((r) => r.at - storedAt.get(`evt-of-${JSON.parse(r.body.toString()).data.object.id}`)!);
    console.log(
      `  ${String(total).padStart(6)} subscriptions: ${expected} events, latency p50 ${fmt(pct(lat, 50))} ms, p99 ${fmt(pct(lat, 99))} ms; all sent in ${fmt(now() - started)} ms (${fmt((expected / (now() - started)) * 1000)} events/s)`,
    );
    await producer.stop();
    await worker.stop(1000);
    await receiver.close();
    await db.query(`delete from subscriptions`);
  }
}

/** Captures stored per second by the capture statement in groups of 100 for `seconds`. */
async function ingestRate(ep: EndpointFixture, seconds: number): Promise<number> {
  const until = now() + seconds * 1000;
  let n = 0;
  const t0 = now();
  while (now() < until) {
    await storeCaptures(db, Array.from({ length: 100 }, (_, i) => captureOf(ep, { body: `{"i":${i}}` })));
    n += 100;
  }
  return (n / (now() - t0)) * 1000;
}

// (b) ingest with 1,000 capture subscriptions ÷ none
{
  console.log('\n(b) ingest throughput, capture statement, groups of 100');
  const none = await insertEndpoint(db, (await createOrganization(db, { name: 'Plain', plan: 'business', region: 'us' })).id);
  const subscribed = await orgWithSubscriptions(1000, 'https://127.0.0.1:9/never');
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < 3; round++) {
    a.push(await ingestRate(none, INGEST_SECONDS / 3));
    b.push(await ingestRate(subscribed, INGEST_SECONDS / 3));
    await db.query(`delete from capture_announcements`);
  }
  const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
  console.log(`  no subscription: ${fmt(sum(a) / a.length)} captures/s; 1,000 capture subscriptions: ${fmt(sum(b) / b.length)} captures/s; ratio ${fmt(sum(b) / sum(a), 3)}`);
  await db.query(`delete from subscriptions`);
}

// (c) live tail keep-up
{
  console.log(`\n(c) live tail, one client following a real weir serve saturated by HTTP ingest (${TAIL_SECONDS} s)`);
  await tailUnderHttpIngest(db.kind === 'pglite' ? 'pglite' : 'postgres', TAIL_SECONDS, process.env.DATABASE_URL ?? '');
  console.log('  the hub alone, in this process, against the capture statement in a loop (no HTTP):');
  const ep = await insertEndpoint(db, (await createOrganization(db, { name: 'Tail', plan: 'business', region: 'us' })).id);
  const hub = new TailHub(db, silent);
  const pushedAt = new Map<string, number>();
  const sub = hub.subscribe({ organizationId: ep.organization_id, endpointId: ep.id, push: (c: CaptureSummary) => pushedAt.set(c.id, now()) });
  await sub.ready;
  const storedAt = new Map<string, number>();
  const t0 = now();
  const until = t0 + TAIL_SECONDS * 1000;
  while (now() < until) {
    const group = Array.from({ length: 100 }, (_, i) => captureOf(ep, { body: `{"i":${i}}` }));
    await storeCaptures(db, group);
    const at = now();
    for (const c of group) storedAt.set(c.id, at);
  }
  const ingestMs = now() - t0;
  const deadline = now() + 30_000;
  while (pushedAt.size < storedAt.size && now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const last = Math.max(...pushedAt.values());
  const lag = [...storedAt].filter(([id]) => pushedAt.has(id)).map(([id, at]) => pushedAt.get(id)! - at);
  const ingestRateTail = (storedAt.size / ingestMs) * 1000;
  const tailRate = (pushedAt.size / (last - t0)) * 1000;
  console.log(
    `  ${db.kind.padEnd(8)} stored ${storedAt.size} at ${fmt(ingestRateTail)}/s; pushed ${pushedAt.size} (${storedAt.size - pushedAt.size} missing) at ${fmt(tailRate)}/s; ratio ${fmt(tailRate / ingestRateTail, 3)}; lag p50 ${fmt(pct(lag, 50))} ms, p99 ${fmt(pct(lag, 99))} ms`,
  );
  sub.unsubscribe();
  hub.stop();
}

// (d) idle CPU with an event in flight
{
  console.log('\n(d) idle CPU, 1,000 subscriptions, one event in flight to a target that never answers');
  const hanging = await startReceiver({ reply: () => 'hang' });
  const ep = await orgWithSubscriptions(1, hanging.url);
  await orgWithSubscriptions(999, 'https://127.0.0.1:9/never');
  const worker = new EventWorker({ db, transport: testTransport({ allowPrivate: true }), logger: silent, concurrency: 16, leaseMs: 600_000, pollMs: 5_000 });
  await worker.start();
  const producer = startProducer();
  await storeCaptures(db, [captureOf(ep, { body: '{}' }), captureOf(ep, { body: '{}' })]);
  await hanging.waitFor(1, 60_000);
  const cpu0 = process.cpuUsage();
  const t0 = now();
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  const used = process.cpuUsage(cpu0);
  const wall = now() - t0;
  console.log(`  ${fmt(wall / 1000, 1)} s with ${worker.inFlight} in flight: this process used ${fmt(((used.user + used.system) / 1000 / wall) * 100, 2)} % of one core`);
  await producer.stop();
  await worker.stop(100);
  await hanging.close();
}

await testDb.close();
process.exit(0);
