/**
 * What a routing filter costs the delivery worker (docs/routing.md, Cost):
 * queues BENCH_FORWARDS captures (default 3000) of the ingest bench's 4 KiB
 * provider event the way the ingest batcher does, to an endpoint whose one
 * forward destination has the typical filter of issue 26 (every capture
 * matches), then to one whose destination has none, and drains each with a
 * fresh worker to the HTTPS receiver of bench/forward.ts. The two alternate
 * for BENCH_ROUNDS rounds (default 4); each prints this process's CPU a
 * forward (on PGlite: the worker, the database and the filter, one thread),
 * and the summary the medians and filter ÷ none. BENCH_PROFILE=dir writes a
 * V8 CPU profile of each drain there (filter-N.cpuprofile, none-N.cpuprofile)
 * and prints the functions whose self time differs most between the two.
 *
 *   node --import tsx bench/filter-profile.ts              # PGlite in memory
 *   DATABASE_URL=postgres://... node --import tsx bench/filter-profile.ts
 */
import { fork } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import pino from 'pino';
import { newId } from '../src/db/ids.ts';
import { HttpTransport } from '../src/delivery/http-transport.ts';
import { DeliveryWorker } from '../src/delivery/worker.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { idTime } from '../src/requests/capture-ids.ts';
import { insertEndpoint, insertForwardDestination } from '../test/helpers/fixtures.ts';
import { testCa } from '../test/helpers/https.ts';
import { openBenchDb } from './bench-db.ts';
import { CONCURRENCY, keptOpen } from './forward-load.ts';
import { cpuNow, cpuSince } from './forward-measure.ts';
import { providerEventBody, TYPICAL_FILTER } from './weir-process.ts';
import { median } from './stats.ts';

const FORWARDS = Number(process.env.BENCH_FORWARDS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const PROFILE_DIR = process.env.BENCH_PROFILE ?? '';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const BODY = Buffer.from(providerEventBody(4096));
// what wrk sends in the ingest bench, as the ingest server stores it
const HEADERS: Array<[string, string]> = [
  ['Host', '127.0.0.1'],
  ['Content-Type', 'application/json'],
  ['Content-Length', String(BODY.length)],
];

const receiver = fork(new URL('./forward-receiver.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
const port = await new Promise<number>((resolve) => receiver.once('message', (m: any) => resolve(m.port)));
const { db, drop } = await openBenchDb();
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
const http = new HttpTransport({ allowPrivate: true, connectTimeoutMs: 10_000, timeoutMs: 30_000, ca: testCa().ca });

async function endpointWith(filter: object | null): Promise<{ id: string; organization_id: string }> {
  const endpoint = await insertEndpoint(db, org.id);
  const fd = await insertForwardDestination(db, endpoint, { url: `https://127.0.0.1:${port}/hook` });
  if (filter) await db.query('update forward_destinations set filter = $1::jsonb where id = $2::uuid', [JSON.stringify(filter), fd.id]);
  return endpoint;
}
const variants = { filter: await endpointWith(TYPICAL_FILTER), none: await endpointWith(null) };

async function queue(endpoint: { id: string }, n: number): Promise<void> {
  for (let done = 0; done < n; done += 500) {
    const caps = Array.from({ length: Math.min(500, n - done) }, () => {
      const id = newId();
      return { id, organization_id: org.id, endpoint_id: endpoint.id, received_at: new Date(idTime(id)), method: 'POST', path: '', query: '', headers: HEADERS, body: BODY, body_size: BODY.length, content_type: 'application/json', source_ip: null };
    });
    await storeCaptures(db, caps);
  }
}

/** Drains `n` queued deliveries with a fresh worker; answers this process's CPU a forward (µs) and how many were sent. */
async function drain(n: number, profileTo = ''): Promise<{ us: number; sent: number }> {
  let settled = 0;
  let sent = 0;
  const w = new DeliveryWorker({
    db,
    logger: pino({ level: 'warn' }),
    node: 'bench',
    transport: keptOpen(http),
    concurrency: CONCURRENCY,
    leaseMs: 60_000,
    pollMs: 5_000,
    onSettled: (_d, status) => {
      settled++;
      if (status === 'succeeded') sent++;
    },
  });
  const session = profileTo ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
  }
  const cpu = await cpuNow(db);
  await w.start();
  while (settled < n) await sleep(2);
  await w.stop();
  const used = await cpuSince(db, cpu);
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    writeFileSync(profileTo, JSON.stringify(profile));
  }
  return { us: ((used.processMs + used.serverMs) * 1000) / n, sent };
}

/** Self time (µs a forward) of each function in a profile, by "name url:line". */
function selfTimes(file: string, n: number): Map<string, number> {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map<number, any>(profile.nodes.map((x: any) => [x.id, x]));
  const out = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const f = nodes.get(profile.samples[i]).callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^.*\/(src|bench)\//, '$1/')}:${f.lineNumber}`;
    out.set(key, (out.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / n);
  }
  return out;
}

// warm-up: connections, JIT, both code paths
for (const v of Object.values(variants)) {
  await queue(v, 500);
  await drain(500);
}
if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
const rounds: Array<{ filter: number; none: number }> = [];
for (let r = 1; r <= ROUNDS; r++) {
  const result: Record<string, number> = {};
  // alternate which goes first
  for (const name of (r % 2 ? ['filter', 'none'] : ['none', 'filter']) as Array<keyof typeof variants>) {
    await queue(variants[name], FORWARDS);
    const { us, sent } = await drain(FORWARDS, PROFILE_DIR ? join(PROFILE_DIR, `${name}-${r}.cpuprofile`) : '');
    if (sent !== FORWARDS) throw new Error(`${name}: ${sent} of ${FORWARDS} forwards sent`);
    result[name] = us;
  }
  rounds.push({ filter: result.filter, none: result.none });
  console.log(`round ${r}: CPU a forward with the filter ${result.filter.toFixed(0)} µs, without ${result.none.toFixed(0)} µs, ratio ${(result.filter / result.none).toFixed(3)}`);
}
const ratios = rounds.map((x) => x.filter / x.none);
console.log(
  `${db.kind}, ${FORWARDS} forwards a drain, ${ROUNDS} rounds: CPU a forward (this process${db.kind === 'postgres' ? ' + server backends' : ''}) with the filter ${median(rounds.map((x) => x.filter)).toFixed(0)} µs, without ${median(rounds.map((x) => x.none)).toFixed(0)} µs; ratio median ${median(ratios).toFixed(3)} range ${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)}`,
);
if (PROFILE_DIR) {
  // summed over the rounds, the functions whose self time differs most
  const sum = (name: string) => {
    const total = new Map<string, number>();
    for (let r = 1; r <= ROUNDS; r++) for (const [k, v] of selfTimes(join(PROFILE_DIR, `${name}-${r}.cpuprofile`), FORWARDS * ROUNDS)) total.set(k, (total.get(k) ?? 0) + v);
    return total;
  };
  const on = sum('filter');
  const off = sum('none');
  const keys = new Set([...on.keys(), ...off.keys()]);
  const diff = [...keys].map((k) => ({ k, on: on.get(k) ?? 0, off: off.get(k) ?? 0 })).sort((a, b) => Math.abs(b.on - b.off) - Math.abs(a.on - a.off));
  console.log('self time a forward (µs), with the filter / without, largest differences:');
  for (const d of diff.slice(0, 25)) console.log(`  ${(d.on - d.off).toFixed(1).padStart(7)}  ${d.on.toFixed(1).padStart(7)} / ${d.off.toFixed(1).padStart(7)}  ${d.k}`);
}

receiver.send('exit');
await http.close();
await db.close();
await drop();
