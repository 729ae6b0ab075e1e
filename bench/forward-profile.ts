/**
 * Where one forward's time goes (docs/forwarding.md, Performance): queues
 * BENCH_FORWARDS captures (default 6000) the way the ingest batcher does,
 * then profiles ONE worker draining them to the HTTPS receiver of
 * bench/forward.ts: the V8 CPU profile of that phase alone (written to
 * BENCH_PROFILE, default /tmp/forward.cpuprofile), summed by part (database
 * driver and PGlite's WebAssembly, undici, TLS and sockets, Weir's own
 * code, garbage collection, idle), and the wall time of each kind of
 * statement the worker sent (on PGlite a statement runs on this thread, so
 * its wall time is CPU time taken from the forwards).
 *
 *   npm run bench:forward-profile              # PGlite in memory
 *   DATABASE_URL=postgres://... npm run bench:forward-profile
 */
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { deliveryQueueFor } from '../src/delivery/start.ts';
import { DeliveryWorker } from '../src/delivery/worker.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { insertEndpoint } from '../test/helpers/fixtures.ts';
import { openBenchDb } from './bench-db.ts';
import { benchCaptures, benchTransport, CONCURRENCY, keptOpen } from './forward-load.ts';
import { counted, cpuNow, cpuSince, type Counter } from './forward-measure.ts';

const FORWARDS = Number(process.env.BENCH_FORWARDS ?? 6000);
const OUT = process.env.BENCH_PROFILE ?? '/tmp/forward.cpuprofile';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const receiver = fork(new URL('./forward-receiver.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
const port = await new Promise<number>((resolve) => receiver.once('message', (m: any) => resolve(m.port)));
const { db, drop } = await openBenchDb();
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
const endpoint = await insertEndpoint(db, org.id, { forwardUrl: `https://127.0.0.1:${port}/hook` });
// what startDelivery runs (on PGlite a thread of its own, which this main-thread profile does not see; WEIR_FORWARD_THREAD)
const http = benchTransport(db);

async function queue(n: number): Promise<void> {
  for (let done = 0; done < n; done += 500) {
    await storeCaptures(db, benchCaptures(org.id, endpoint.id, Math.min(500, n - done)));
  }
}

async function drain(n: number, c: Counter): Promise<number> {
  let settled = 0;
  const w = new DeliveryWorker({
    db: counted(db, c),
    logger: pino({ level: 'warn' }),
    node: 'bench',
    transport: keptOpen(http),
    concurrency: CONCURRENCY,
    // as startDelivery runs it (claim-ahead, the unrecorded limit)
    ...deliveryQueueFor(db, { leaseMs: 60_000, forwardTimeoutMs: 30_000, concurrency: CONCURRENCY, holdBytes: loadConfig({}).deliveryHoldBytes }),
    leaseMs: 60_000,
    pollMs: 5_000,
    onSettled: () => settled++,
  });
  const t0 = performance.now();
  await w.start();
  while (settled < n) await sleep(2);
  const ms = performance.now() - t0;
  await w.stop();
  return ms;
}

// warm-up: connections, JIT
await queue(1000);
await drain(1000, { statements: 0 });
await queue(FORWARDS);

const c: Counter = { statements: 0, byKind: new Map() };
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 200 });
await session.post('Profiler.start');
const cpu = await cpuNow(db);
const ms = await drain(FORWARDS, c);
const used = await cpuSince(db, cpu);
const { profile } = await session.post('Profiler.stop');
session.disconnect();
writeFileSync(OUT, JSON.stringify(profile));

const perForward = (x: number) => `${((x * 1000) / FORWARDS).toFixed(0)} µs`;
console.log(`${db.kind}: ${FORWARDS} forwards in ${ms.toFixed(0)} ms (${((FORWARDS * 1000) / ms).toFixed(0)}/s); CPU a forward ${perForward(used.processMs)} in this process${db.kind === 'postgres' ? `, ${perForward(used.serverMs)} in the server` : ''}; ${(c.statements / FORWARDS).toFixed(2)} statements a forward`);
console.log('statements (wall time, per forward):');
for (const [kind, k] of [...c.byKind!].sort((a, b) => b[1].ms - a[1].ms)) {
  console.log(`  ${kind}: ${k.count} × ${(k.ms / k.count).toFixed(2)} ms = ${perForward(k.ms)} a forward`);
}

// The profile by part: each sample's time goes to the innermost frame's part.
const parts = new Map<string, number>();
let total = 0;
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const partOf = (url: string, fn: string): string => {
  if (fn === '(idle)') return 'idle (waiting on the network or the database server)';
  if (fn === '(garbage collector)') return 'garbage collection';
  if (url.startsWith('wasm://') || url.includes('@electric-sql/pglite')) return 'PGlite (WebAssembly and its JS)';
  if (url.includes('node_modules/pg') || url.includes('pg-protocol')) return 'node-postgres driver';
  if (url.includes('node_modules/undici')) return 'undici';
  if (/node:(_tls|tls|net|internal\/stream|internal\/tls|stream)/.test(url) || fn === 'writev' || fn === 'writeBuffer' || fn === 'writeUtf8String') return 'TLS, sockets and streams';
  if (url.includes('/src/')) return `Weir: ${url.slice(url.indexOf('/src/') + 1)}`;
  if (url === '' ) return `native (${fn || 'program'})`;
  return 'other Node internals (timers, promises, events, buffers)';
};
for (let i = 0; i < profile.samples!.length; i++) {
  const n = nodes.get(profile.samples![i])!;
  const dt = profile.timeDeltas![i] ?? 0;
  total += dt;
  const part = partOf(n.callFrame.url, n.callFrame.functionName);
  parts.set(part, (parts.get(part) ?? 0) + dt);
}
console.log(`profile of the drain (${(total / 1000).toFixed(0)} ms of samples, ${OUT}):`);
for (const [part, us] of [...parts].sort((a, b) => b[1] - a[1]).slice(0, 16)) {
  console.log(`  ${((100 * us) / total).toFixed(1)} % ${part}: ${perForward(us / 1000)} a forward`);
}

receiver.send('exit');
await http.close();
await db.close();
await drop();
