/**
 * Forwarding benchmark (npm run bench:forward). Prints ratios against a
 * baseline measured in the same run, never absolute pass/fail thresholds:
 *  (a) throughput: forwards/s through Weir (captures queued, worker drains
 *      them) divided by undici posting the same requests straight to the
 *      same receiver with the same concurrency;
 *  (b) drain ratio: at a fixed offered capture load of half of (a)'s
 *      maximum, delivered/s divided by captured/s, with the queue depth;
 *  (c) ingest-to-destination latency p50/p99: webhooks POSTed to the real
 *      ingest listener, timed from each one's scheduled send (open loop: a
 *      late producer does not hide latency): fresh forwards handed to the
 *      worker by the capture statement, with NOTIFY wake-ups (as a node runs:
 *      src/delivery/handoff.ts), then without the hand-off, then by polling
 *      alone;
 *  (d) only with BENCH_PARTS containing d (it takes minutes; (a) always
 *      runs): the same latency with NOTIFY wake-ups right after a flood of
 *      BENCH_FLOOD captures (default 200,000) was queued and drained, when
 *      the queue's tables and indexes carry what the flood left behind.
 * The database is PGlite in memory (BENCH_PGLITE=disk: in a temporary data
 * folder, as `npm start` runs it), or a fresh PostgreSQL database beside
 * DATABASE_URL when it is set. In (a) and (b) captures are written the way
 * the ingest batcher writes them (storeCaptures: capture rows and their
 * deliveries in one statement), so the offered load is exact and costs no HTTP.
 * Per round of (a) it also measures CPU per forward against CPU per direct
 * post (this process, plus on PostgreSQL the server backends of this
 * database) and statements per forward (every statement the worker sends
 * through the Db interface, see forward-measure.ts). It then splits the
 * ratio into two factors: CPU a direct post ÷ CPU a forward, every process
 * counted (the receiver's too), and the cores each phase kept busy: the
 * first is the work, the second how well the processes overlap on the
 * machine's cores (docs/forwarding.md, "The ratio's two factors").
 * The HTTPS transport is the one startDelivery gives the database: on
 * PGlite a thread of its own, unless WEIR_FORWARD_THREAD=off (or on).
 * Env: BENCH_FORWARDS (a phase of (a), default 10000: with 3000 the direct
 * client was still speeding up from round to round, 9,000 to 16,000 posts a
 * second, and the ratio read 0.34-0.39 where phases of 12,000 read 0.28), BENCH_SECONDS (default 10),
 * BENCH_ROUNDS (rounds of (a), default 3, the median is the figure).
 * BENCH_TRANSFORM=1 adds (t): forwards through a forward destination whose
 * transformation rewrites headers and the JSON body ÷ the same destination
 * without one, alternating in the same run, and the sandbox's cold start
 * and cost a call (docs/transformations.md).
 * BENCH_THREADS=1 also prints, per round of (a), the CPU a post or forward
 * of this process's main thread, of its other threads (the HTTPS
 * transport's thread on PGlite, V8's helpers, which run most of the garbage
 * collector) and of the receiver's process (docs/forwarding.md, "By
 * thread"), and the main thread's collections a 10,000 posts or forwards,
 * young and full, with their pauses.
 * BENCH_STEPS=1 also prints, for (c) with NOTIFY, when each step of a
 * forward happened, as the median over the webhooks of its time since the
 * webhook's scheduled POST: the capture statement sent and answered, the
 * POST acknowledged, the NOTIFY heard, the claim sent and answered, the
 * forward handed to the transport (docs/forwarding.md, "Where a quiet
 * forward's time goes").
 */
import { fork } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { createSecureContext, rootCertificates } from 'node:tls';
import pino from 'pino';
import { Agent } from 'undici';
import { loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/db.ts';
import type { Transport } from '../src/delivery/transport.ts';
import { deliveryQueueFor } from '../src/delivery/start.ts';
import { ThreadedHttpTransport } from '../src/delivery/thread-transport.ts';
import { DeliveryWorker } from '../src/delivery/worker.ts';
import { startIngest } from '../src/ingest/server.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { openBenchDb, PGLITE } from './bench-db.ts';
import { collectionsNow, collectionsSince, counted, cpuNow, cpuSince, procCpuMs, threadCpuNow, threadCpuSince, type Collections, type Counter } from './forward-measure.ts';
import { benchCaptures, benchTransport, BODY, CONCURRENCY, HEADERS, keptOpen } from './forward-load.ts';
import { insertEndpoint, insertForwardDestination } from '../test/helpers/fixtures.ts';
import { Sandbox } from '../src/transformations/sandbox.ts';
import { testCa } from '../test/helpers/https.ts';
import { median } from './stats.ts';

const FORWARDS = Number(process.env.BENCH_FORWARDS ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Math.max(3, Number(process.env.BENCH_ROUNDS ?? 3));
/** Which parts to run (default all): BENCH_PARTS=a for a profile of the throughput part alone. */
const PARTS = process.env.BENCH_PARTS ?? 'abc';
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, d = 0) => n.toFixed(d);

/** BENCH_STEPS: when each step of a quiet forward happened (epoch ms), in the order they happen. */
const STEPS = process.env.BENCH_STEPS === '1';
/** BENCH_THREADS=1: each round of (a) also prints the CPU of this process's main thread and of its other threads. */
const THREADS = process.env.BENCH_THREADS === '1';
const steps: Record<string, number[]> = { 'POST sent': [], 'capture statement sent': [], 'capture statement answered': [], 'POST acknowledged': [], 'NOTIFY heard': [], 'claim sent': [], 'claim answered': [], 'handed to the transport': [] };
const step = (name: keyof typeof steps) => STEPS && steps[name].push(now());
/** Runs `run`, marking when it was sent and answered. */
async function stepped<T>(sent: string, answered: string, run: () => Promise<T>): Promise<T> {
  step(sent);
  try {
    return await run();
  } finally {
    step(answered);
  }
}

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
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

// --- the database -----------------------------------------------------------
const { db, drop } = await openBenchDb();
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
const endpoint = await insertEndpoint(db, org.id, { forwardUrl: target });

/** One capture group: `n` captures and their deliveries in one capture statement, like the ingest batcher's group commit. */
async function capture(n: number, into: { id: string } = endpoint): Promise<string[]> {
  const caps = benchCaptures(org.id, into.id, n);
  const outcomes = await storeCaptures(db, caps);
  if (outcomes.some((o) => o !== 'stored')) throw new Error(`capture group not stored: ${[...new Set(outcomes)].join(', ')}`);
  return caps.map((c) => c.id);
}

// One transport for every run (a worker's stop() would close it): its
// connections stay warm between rounds, as the direct baseline's do.
// The transport startDelivery gives this database (benchTransport).
const http = benchTransport(db);
const transport: Transport = keptOpen(http, () => step('handed to the transport'));

let settled = 0;
// The worker's statements are counted; the bench's own (captures, reports) are not.
const statements: Counter = { statements: 0 };
const countedDb = counted(db, statements);
const workerDb: Db = !STEPS
  ? countedDb
  : {
      ...countedDb,
      // the claim runs with its planner settings (claim.ts)
      withSettings: (settings, fn) =>
        countedDb.withSettings(settings, (q) =>
          fn({
            ...q,
            query: (text, params, opts) => (opts?.name?.startsWith('weir_claim') ? stepped('claim sent', 'claim answered', () => q.query(text, params, opts)) : q.query(text, params, opts)),
          }),
        ),
      listen: (channel, onNotify, onReconnect) => countedDb.listen(channel, (payload) => (step('NOTIFY heard'), onNotify(payload)), onReconnect),
    };
function worker(opts: { listen?: boolean; pollMs?: number } = {}): DeliveryWorker {
  return new DeliveryWorker({
    db: workerDb,
    logger: pino({ level: 'warn' }),
    node: 'bench',
    transport,
    concurrency: CONCURRENCY,
    // as startDelivery runs it (claim-ahead, the unrecorded limit)
    ...deliveryQueueFor(db, { leaseMs: 60_000, forwardTimeoutMs: 30_000, concurrency: CONCURRENCY, holdBytes: loadConfig({}).deliveryHoldBytes }),
    leaseMs: 60_000,
    pollMs: opts.pollMs ?? 5_000,
    listen: opts.listen,
    onSettled: () => settled++,
  });
}

async function waitSettled(n: number): Promise<void> {
  while (settled < n) await sleep(2);
}

// --- (a) throughput -----------------------------------------------------------
// The baseline client: undici with the same trust set up the same way (one secure context).
const agent = new Agent({ connect: { secureContext: createSecureContext({ ca: [...rootCertificates, testCa().ca] }) } });
interface Phase {
  rate: number;
  /** CPU ms per forward or post: this process, and the database server's (PostgreSQL). */
  cpuMs: number;
  serverCpuMs: number;
  statements: number;
  /** CPU ms per forward or post of this process's main thread, and of its other threads, busiest first. */
  threads: { mainMs: number; othersMs: number[] };
  /** CPU ms per forward or post of the receiver's process. */
  receiverMs: number;
  /** The main thread's collections during the phase. */
  collections: Collections;
}

function perItem(t: { mainMs: number; othersMs: number[] }, n: number): Phase['threads'] {
  return { mainMs: t.mainMs / n, othersMs: t.othersMs.map((ms) => ms / n) };
}

/** "main 120, others 40 (30, 6, 4)" in µs an item: the three busiest other threads. */
function threadsText(t: Phase['threads']): string {
  const others = t.othersMs.reduce((a, b) => a + b, 0);
  return `main ${fmt(t.mainMs * 1000)}, other threads ${fmt(others * 1000)} (${t.othersMs.slice(0, 3).map((ms) => fmt(ms * 1000)).join(', ')})`;
}

/** "8 young (21 ms of pauses), 10.0 full (68 ms)" a 10,000 items, of a phase of `n`. */
function collectionsText(c: Collections, n: number): string {
  const per = 10_000 / n;
  return `${fmt(c.young * per)} young (${fmt(c.youngMs * per)} ms of pauses), ${fmt(c.full * per, 1)} full (${fmt(c.fullMs * per)} ms)`;
}

async function direct(n: number): Promise<Phase> {
  const headers = HEADERS.flat();
  let next = 0;
  const cpu = await cpuNow(db);
  const threads = threadCpuNow();
  const gc = collectionsNow();
  const received = procCpuMs([receiver.pid!]);
  const started = now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++;
        const res = await agent.request({ origin: `https://127.0.0.1:${port}`, path: '/hook', method: 'POST', headers: [...headers, 'webhook-id', `direct_${i}`], body: BODY });
        await res.body.dump();
      }
    }),
  );
  const rate = n / ((now() - started) / 1000);
  const perThread = perItem(threadCpuSince(threads), n);
  const collections = collectionsSince(gc);
  const receiverMs = (procCpuMs([receiver.pid!]) - received) / n;
  const used = await cpuSince(db, cpu);
  return { rate, cpuMs: used.processMs / n, serverCpuMs: used.serverMs / n, statements: 0, threads: perThread, receiverMs, collections };
}

async function throughWeir(n: number, into: { id: string } = endpoint): Promise<Phase> {
  for (let done = 0; done < n; done += 500) await capture(Math.min(500, n - done), into);
  settled = 0;
  const w = worker();
  const cpu = await cpuNow(db);
  const threads = threadCpuNow();
  const gc = collectionsNow();
  const received = procCpuMs([receiver.pid!]);
  const sent = statements.statements;
  const started = now();
  await w.start();
  await waitSettled(n);
  const rate = n / ((now() - started) / 1000);
  const count = statements.statements - sent;
  const perThread = perItem(threadCpuSince(threads), n);
  const collections = collectionsSince(gc);
  const receiverMs = (procCpuMs([receiver.pid!]) - received) / n;
  const used = await cpuSince(db, cpu);
  await w.stop();
  return { rate, cpuMs: used.processMs / n, serverCpuMs: used.serverMs / n, statements: count / n, threads: perThread, receiverMs, collections };
}

console.log(`forwarding benchmark on ${db.kind}${db.kind === 'pglite' ? ` (${PGLITE === 'disk' ? 'a data folder' : 'in memory'})` : ''}, concurrency ${CONCURRENCY}, ${BODY.length}-byte body, HTTPS transport ${http instanceof ThreadedHttpTransport ? 'on a thread of its own' : 'on the main thread'}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
// Warm-up (connections, JIT: the direct client kept speeding up over its
// first 20,000 posts), then alternating rounds so both sides see the same
// machine conditions; the median ratio is the figure.
await direct(20_000);
await throughWeir(3000);
await arrivals();
const rounds: Array<{ direct: Phase; weir: Phase }> = [];
for (let r = 0; r < ROUNDS; r++) {
  const d = await direct(FORWARDS);
  const w = await throughWeir(FORWARDS);
  rounds.push({ direct: d, weir: w });
  console.log(
    `(a) round ${r + 1} (load ${fmt(loadavg()[0], 1)}): direct ${fmt(d.rate)}/s, ${fmt(d.cpuMs * 1000)} µs CPU a post; ` +
      `Weir ${fmt(w.rate)}/s, ${fmt(w.cpuMs * 1000)} µs CPU a forward${db.kind === 'postgres' ? ` + ${fmt(w.serverCpuMs * 1000)} µs in the server` : ''}, ${fmt(w.statements, 2)} statements a forward`,
  );
  if (THREADS) {
    console.log(`    by thread, µs: a direct post ${threadsText(d.threads)}, the receiver ${fmt(d.receiverMs * 1000)}; a forward ${threadsText(w.threads)}, the receiver ${fmt(w.receiverMs * 1000)}`);
    console.log(`    the main thread's collections, a 10,000: direct posts ${collectionsText(d.collections, FORWARDS)}; forwards ${collectionsText(w.collections, FORWARDS)}`);
  }
}
// The two factors of the file's comment: in each round their product is
// Weir ÷ direct exactly; the medians printed multiply to about the median.
const allCpuMs = (p: Phase) => p.cpuMs + p.serverCpuMs + p.receiverMs;
const busyCores = (p: Phase) => (p.rate * allCpuMs(p)) / 1000;
console.log(
  `(a) the ratio's two factors: CPU a direct post ÷ CPU a forward, every process (receiver and server included) ` +
    `${fmt(median(rounds.map((r) => allCpuMs(r.direct) / allCpuMs(r.weir))), 2)}; ` +
    `cores busy ${fmt(median(rounds.map((r) => busyCores(r.weir))), 2)} through Weir ÷ ${fmt(median(rounds.map((r) => busyCores(r.direct))), 2)} direct, of ${availableParallelism()}`,
);
const got = await arrivals();
const delivered = new Set([...got.keys()].filter((k) => k.startsWith('msg_'))).size;
const weirRate = median(rounds.map((r) => r.weir.rate));
console.log(
  `(a) median of ${ROUNDS} rounds: Weir ÷ direct ${fmt(median(rounds.map((r) => r.weir.rate / r.direct.rate)), 2)}; ` +
    `CPU a forward ÷ CPU a direct post ${fmt(median(rounds.map((r) => (r.weir.cpuMs + r.weir.serverCpuMs) / r.direct.cpuMs)), 1)}` +
    `${db.kind === 'postgres' ? ` (this process alone ${fmt(median(rounds.map((r) => r.weir.cpuMs / r.direct.cpuMs)), 1)})` : ''}; ` +
    `statements a forward ${fmt(median(rounds.map((r) => r.weir.statements)), 2)} (${delivered} distinct captures arrived of ${ROUNDS * FORWARDS})`,
);

// --- (t) transformations: with ÷ without, same run ------------------------------
if (process.env.BENCH_TRANSFORM === '1') {
  // a typical transformation: drop a header, add two, reshape the JSON body
  const code = `function handler(request, context) {
  const headers = { ...request.headers, 'x-event-type': request.body.type, 'x-weir-capture': context.request_id };
  delete headers['stripe-signature'];
  const o = request.body.data.object;
  return { ...request, headers, body: { event: request.body.id, type: request.body.type, amount: o.amount / 100, currency: o.currency.toUpperCase() } };
}`;
  const plainEp = await insertEndpoint(db, org.id);
  const transformedEp = await insertEndpoint(db, org.id);
  await insertForwardDestination(db, plainEp, { url: target });
  const fd = await insertForwardDestination(db, transformedEp, { url: target });
  await db.query('update forward_destinations set transformation = $1::jsonb where id = $2::uuid', [JSON.stringify({ code }), fd.id]);
  await throughWeir(1000, transformedEp);
  const tRounds: Array<{ plain: number; transformed: number }> = [];
  for (let r = 0; r < ROUNDS; r++) {
    const plain = await throughWeir(FORWARDS, plainEp);
    const transformed = await throughWeir(FORWARDS, transformedEp);
    tRounds.push({ plain: plain.rate, transformed: transformed.rate });
    console.log(`(t) round ${r + 1} (load ${fmt(loadavg()[0], 1)}): without ${fmt(plain.rate)}/s, with a transformation ${fmt(transformed.rate)}/s`);
  }
  console.log(`(t) median of ${ROUNDS} rounds: with ÷ without ${fmt(median(tRounds.map((r) => r.transformed / r.plain)), 2)}`);
  // the sandbox alone: a fresh WebAssembly instance and a first run, then warm calls
  const cold = new Sandbox();
  const input = { request: { method: 'POST', path: '', query: '', headers: Object.fromEntries(HEADERS.map(([n, v]) => [n.toLowerCase(), v])), body: JSON.parse(BODY.toString()) }, context: { request_id: 'x' } };
  const c0 = performance.now();
  await cold.run(code, input, { scope: 'bench' });
  const firstRun = performance.now() - c0;
  const calls = 2000;
  const c1 = performance.now();
  for (let i = 0; i < calls; i++) await cold.run(code, input, { scope: 'bench' });
  const perCall = (performance.now() - c1) / calls;
  console.log(`(t) sandbox: cold start ${fmt(cold.coldStartMs, 1)} ms (WebAssembly instance) + first run with compile ${fmt(firstRun - cold.coldStartMs, 1)} ms; warm call ${fmt(perCall * 1000)} µs (input and output as JSON)`);
  cold.close();
}

// --- (b) drain ratio at half the maximum --------------------------------------
if (PARTS.includes('b')) {
  const rate = weirRate / 2;
  settled = 0;
  const w = worker();
  await w.start();
  let captured = 0;
  let maxDepth = 0;
  const cumulative: number[] = [];
  const started = now();
  let lastSecond = started;
  while (now() - started < SECONDS * 1000) {
    const due = Math.floor((rate * (now() - started)) / 1000) - captured;
    if (due > 0) {
      await capture(due);
      captured += due;
    }
    maxDepth = Math.max(maxDepth, captured - settled);
    if (now() - lastSecond >= 1000) {
      cumulative.push(settled / captured);
      lastSecond = now();
    }
    await sleep(10);
  }
  const windowSeconds = (now() - started) / 1000;
  const deliveredInWindow = settled;
  const depthAtEnd = captured - settled;
  const drainStart = now();
  await waitSettled(captured);
  const drainMs = now() - drainStart;
  await w.stop();
  console.log(
    `(b) drain at ${fmt(rate)}/s offered for ${fmt(windowSeconds, 1)} s: captured ${fmt(captured / windowSeconds)}/s, delivered ${fmt(deliveredInWindow / windowSeconds)}/s, ` +
      `ratio ${fmt(deliveredInWindow / captured, 3)} (delivered/captured so far, sampled each second: ${fmt(Math.min(...cumulative), 3)} to ${fmt(Math.max(...cumulative), 3)}); ` +
      `queue depth max ${maxDepth}, at end ${depthAtEnd}, drained ${fmt(drainMs)} ms later`,
  );
}

// --- (c) latency: NOTIFY versus polling alone ---------------------------------
// Through the real ingest listener: each webhook is POSTed to /h/{slug} at
// its scheduled time and timed from then to its arrival at the destination.
// with BENCH_STEPS the ingest listener's one statement, the capture group's, is marked
const ingestDb: Db = STEPS ? { ...db, query: (text, params, opts) => stepped('capture statement sent', 'capture statement answered', () => db.query(text, params, opts)) } : db;
const ingest = await startIngest({ db: ingestDb, config: loadConfig({ WEIR_LOG_LEVEL: 'warn' }), logger: pino({ level: 'warn' }) }, 0);
const ingestClient = new Agent();
const ingestPath = `/h/${endpoint.slug}`;

async function post(): Promise<string> {
  step('POST sent');
  const res = await ingestClient.request({ origin: `http://127.0.0.1:${ingest.port}`, path: ingestPath, method: 'POST', headers: HEADERS.flat(), body: BODY });
  const answer = (await res.body.json()) as { request_id: string };
  step('POST acknowledged');
  if (res.statusCode !== 200) throw new Error(`ingest answered ${res.statusCode}`);
  return answer.request_id;
}

async function latency(label: string, opts: { listen: boolean; pollMs: number; handoff?: boolean }, rate: number, part = 'c'): Promise<void> {
  settled = 0;
  const w = worker(opts);
  await w.start();
  // the capture statement leases fresh forwards to the worker, as src/server.ts wires them (src/delivery/handoff.ts)
  ingest.handTo(opts.handoff ? w.handoff() : undefined);
  await arrivals();
  const sent = statements.statements;
  const scheduled = new Map<string, number>();
  const started = now() + 50;
  const total = Math.round(rate * SECONDS);
  const sends: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const at = started + (i * 1000) / rate;
    const wait = at - now();
    if (wait > 0) await sleep(wait);
    // not awaited: a slow answer must not delay the next scheduled send
    sends.push(post().then((id) => void scheduled.set(`msg_${id}`, at)));
  }
  await Promise.all(sends);
  await waitSettled(total);
  const perForward = (statements.statements - sent) / total;
  ingest.handTo(undefined);
  await w.stop();
  const got = await arrivals();
  const lat = [...scheduled].map(([id, at]) => (got.get(id) ?? NaN) - at).filter((x) => !Number.isNaN(x));
  if (STEPS && opts.listen) {
    // each step's first mark from 5 ms before the webhook's scheduled POST on (its timer may fire a
    // little early by this clock; webhooks are 50 ms apart, far more than a forward takes)
    const since = (marks: number[]) => [...scheduled.values()].map((at) => (marks.find((t) => t >= at - 5) ?? NaN) - at).filter((x) => !Number.isNaN(x));
    for (const [name, marks] of Object.entries(steps)) console.log(`  ${name}: p50 ${fmt(percentile(since(marks), 50), 2)} ms after the POST`);
    console.log(`  arrived: p50 ${fmt(percentile(lat, 50), 2)} ms after the POST`);
  }
  for (const marks of Object.values(steps)) marks.length = 0;
  console.log(`(${part}) ingest-to-destination latency, ${label}, ${rate}/s for ${SECONDS} s (${lat.length} webhooks): p50 ${fmt(percentile(lat, 50), 1)} ms, p99 ${fmt(percentile(lat, 99), 1)} ms; ${fmt(perForward, 2)} statements a forward`);
}

const latencyRate = 20;
if (PARTS.includes('c')) {
  await latency('hand-off and NOTIFY wake-ups (as a node runs)', { listen: true, pollMs: 5_000, handoff: true }, latencyRate);
  await latency('NOTIFY wake-ups without hand-off (safety poll 5 s)', { listen: true, pollMs: 5_000 }, latencyRate);
  await latency('polling alone every 1 s', { listen: false, pollMs: 1_000 }, latencyRate);
  await latency('polling alone every 5 s (the safety poll)', { listen: false, pollMs: 5_000 }, latencyRate);
}

// --- (d) latency right after a flood has drained ----------------------------
const FLOOD = Number(process.env.BENCH_FLOOD ?? 200_000);
if (PARTS.includes('d')) {
  const started = now();
  const flood = await throughWeir(FLOOD);
  await arrivals();
  console.log(`(d) a flood of ${FLOOD} captures queued and drained in ${fmt((now() - started) / 1000)} s (drained at ${fmt(flood.rate)} forwards/s, ${fmt(flood.statements, 2)} statements a forward)`);
  await latency(`hand-off and NOTIFY wake-ups right after a ${FLOOD}-capture flood drained`, { listen: true, pollMs: 5_000, handoff: true }, latencyRate, 'd');
}

receiver.send('exit');
await ingest.close();
await ingestClient.close();
await agent.close();
await http.close();
await db.close();
await drop();
