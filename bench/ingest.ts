// Ingest benchmark: captures per second of Weir (on PostgreSQL and on PGlite)
// as a ratio of a bare node:http server's requests per second, all measured
// in this one run with the same load generator, payload and connections.
//
//   npm run bench:ingest            (or: node --import tsx bench/ingest.ts)
//   BENCH_SECONDS=10 BENCH_ROUNDS=3 BENCH_DATABASE_URL=postgres://... npm run bench:ingest
//   BENCH_METRICS=both npm run bench:ingest   (each Weir twice: metrics on and WEIR_METRICS=0)
//   BENCH_METRICS=control npm run bench:ingest (each Weir twice, both as shipped: what "no difference" measures as)
//   BENCH_STORES=pglite npm run bench:ingest  (only Weir on PGlite beside the bare server)
//   BENCH_VERIFY=stripe npm run bench:ingest  (each Weir twice: Stripe signature verification on its endpoint and off;
//                                              every request, to every target, carries a valid Stripe-Signature)
//   BENCH_ROUTING=filter npm run bench:ingest (issue 26: each Weir twice, both forwarding every capture of a 4 KB JSON body to an
//                                              HTTPS receiver in this process, one destination with a typical filter
//                                              (5 rules, one $or) that every capture matches, the other without)
//   BENCH_ROUTING=dedup npm run bench:ingest  (issue 26: each Weir twice, its endpoint with deduplication on body_path "id" and
//                                              without; the body is fixed, so every capture after the first is a duplicate:
//                                              one hot key, the worst case of the upsert)
//
// Method (docs/capture.md): every server and the load generator (wrk when it
// is installed, else autocannon: bench/ingest-load.ts; 50 connections, 1 KiB
// JSON POSTs) are separate processes. Rounds
// interleave the targets (bare, Weir/PostgreSQL, Weir/PGlite) so drift of a
// noisy machine hits all of them alike; each measurement follows a sync (the
// previous target's writes flushed) and a warm-up.
// Weir runs as the real CLI (`node bin/weir.mjs serve`). Afterwards every
// request_id that was acknowledged is looked up in the database. On Linux
// each saturated measurement also prints CPU per request of the server
// process, the local PostgreSQL processes and the load generator.
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Db } from '../src/db/db.ts';
import { openPglite } from '../src/db/pglite.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { createFreshDatabase } from '../test/helpers/db.ts';
import { loadGenerator, type LoadResult } from './ingest-load.ts';
import { child, providerEventBody, runLoad, spawnWeir, TYPICAL_FILTER, waitFor } from './weir-process.ts';
import { startReceiver, testCa, type Receiver } from '../test/helpers/https.ts';
import { median } from './stats.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = 50;
// Latency at saturation is queueing (50 connections / throughput), so it is
// also measured at a fixed rate every target sustains, where it shows what
// a request costs: for Weir, the batching tick plus a commit.
const RATE = Number(process.env.BENCH_RATE ?? 1000);
// `on` (default): Weir as shipped, metrics on. `off`: WEIR_METRICS=0.
// `both`: each Weir twice, on and off, and after the usual rounds the pair
// is measured side by side (below) and compared as a ratio. `control`: the
// same, with both of the pair as shipped, so the ratio shows what the method
// reads when there is no difference. The child's environment is built from
// scratch (below), so this switch is the only way WEIR_METRICS reaches it.
const METRICS = process.env.BENCH_METRICS ?? 'on';
// `stripe`: each Weir twice, its endpoint with Stripe verification and
// without, measured as a pair like BENCH_METRICS=both (issue 25's ratio).
const VERIFY = process.env.BENCH_VERIFY ?? '';
if (VERIFY !== '' && VERIFY !== 'stripe') throw new Error(`BENCH_VERIFY must be stripe or unset, not ${JSON.stringify(VERIFY)}`);
if (VERIFY && METRICS !== 'on') throw new Error('BENCH_VERIFY and BENCH_METRICS pair different things: set one of them');
const ROUTING = process.env.BENCH_ROUTING ?? '';
if (ROUTING !== '' && ROUTING !== 'filter' && ROUTING !== 'dedup') throw new Error(`BENCH_ROUTING must be filter, dedup or unset, not ${JSON.stringify(ROUTING)}`);
if (ROUTING && (METRICS !== 'on' || VERIFY)) throw new Error('BENCH_ROUTING pairs its own variants: leave BENCH_METRICS and BENCH_VERIFY unset');
let receiver: Receiver | undefined;
const PAIRED = METRICS === 'both' || METRICS === 'control' || VERIFY !== '' || ROUTING !== '';
const STRIPE_SECRET = 'whsec_' + randomBytes(24).toString('hex');
// With a pair: how many side-by-side measurements.
const PAIR_ROUNDS = Number(process.env.BENCH_PAIR_ROUNDS ?? 8);
if (!['on', 'off', 'both', 'control'].includes(METRICS)) throw new Error(`BENCH_METRICS must be on, off, both or control, not ${JSON.stringify(METRICS)}`);
// Which Weirs to measure beside the bare server: postgres, pglite or both (default).
const STORES = (process.env.BENCH_STORES ?? 'postgres,pglite').split(',');
if (STORES.length === 0 || STORES.some((x) => x !== 'postgres' && x !== 'pglite')) throw new Error(`BENCH_STORES must list postgres and/or pglite, not ${JSON.stringify(process.env.BENCH_STORES)}`);
const PG_BASE = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
const work = mkdtempSync(join(tmpdir(), 'weir-bench-'));

interface Target {
  name: string;
  url: string;
  /** The server's process id, for its CPU time. */
  pid: number;
  stop(): Promise<void>;
  /** How many of these ids are stored (undefined for the bare server, which stores nothing). */
  verify?(ids: string[]): Promise<number>;
}

type Measure = LoadResult;

/** CPU per request in microseconds: the server, the local PostgreSQL processes, the load generator. */
interface Cpu {
  server: number;
  postgres: number;
  load: number;
}

async function startBare(): Promise<Target> {
  const c = child(['--import', 'tsx', 'bench/ingest-bare.ts']);
  const port = await waitFor(() => /^(\d+)\n/.exec(c.output())?.[1], 'the bare server');
  return {
    name: 'bare node:http',
    url: `http://127.0.0.1:${port}/`,
    pid: c.proc.pid!,
    async stop() {
      c.proc.kill('SIGTERM');
      await c.exited;
    },
  };
}

async function startWeir(
  name: string,
  store: Record<string, string>,
  open: () => Promise<Db>,
  cleanup: () => Promise<void>,
  endpoint: object = { name: 'bench' },
  destination?: object,
): Promise<Target> {
  const weir = await spawnWeir(name, store, endpoint);
  if (destination) {
    const d = await fetch(`${weir.api}/v1/destinations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${weir.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...destination, endpoint_id: weir.endpointId }),
    });
    if (d.status !== 201) throw new Error(`destination: ${d.status} ${await d.text()}`);
  }
  return {
    name,
    url: weir.ingestUrl,
    pid: weir.pid,
    stop: async () => {
      await weir.stop();
      await cleanup();
    },
    async verify(ids) {
      // Stop first: a PGlite folder belongs to one process, and the count
      // must not include anything still in flight.
      await weir.stop();
      const db = await open();
      try {
        let found = 0;
        for (let i = 0; i < ids.length; i += 10_000) {
          const { rows } = await db.query<{ n: number }>('select count(*)::int as n from captured_requests where id = any($1::uuid[])', [ids.slice(i, i + 10_000)]);
          found += rows[0].n;
        }
        if (VERIFY) {
          // the pair's point: the +verify endpoint really verified every capture (and the other verified none)
          const { rows } = await db.query<{ status: string | null; n: number }>('select verification_status as status, count(*)::int as n from captured_requests group by 1 order by 1');
          console.log(`${name.padEnd(20)} verification of the stored captures: ${rows.map((r) => `${r.status ?? 'none'} ${r.n}`).join(', ')}`);
        }
        return found;
      } finally {
        await db.close();
      }
    },
  };
}

interface Variant {
  suffix: string;
  env: Record<string, string>;
  /** The endpoint the load is sent to (default: no settings). */
  endpoint?: object;
  /** A forward destination made on it (BENCH_ROUTING=filter). */
  destination?: object;
}

/** The settings and name suffix of each variant this run measures. */
function metricsVariants(): Variant[] {
  if (ROUTING === 'filter') {
    const env = { WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile };
    const destination = { name: 'receiver', url: `${receiver!.url}/in` };
    return [
      { suffix: ' +filter', env, destination: { ...destination, filter: TYPICAL_FILTER } },
      { suffix: ' -filter', env, destination },
    ];
  }
  if (ROUTING === 'dedup') {
    return [
      { suffix: ' +dedup', env: {}, endpoint: { name: 'bench', deduplication: { window_seconds: 3600, key: { body_path: 'id' } } } },
      { suffix: ' -dedup', env: {} },
    ];
  }
  if (VERIFY) {
    // a day's tolerance: the one signature made at start stays valid for the whole run
    const verification = { provider: 'stripe', secret: STRIPE_SECRET, tolerance_seconds: 86_400 };
    return [
      { suffix: ' +verify', env: {}, endpoint: { name: 'bench', verification } },
      { suffix: ' -verify', env: {} },
    ];
  }
  const on = { suffix: PAIRED ? ' +metrics' : '', env: {} };
  const off = { suffix: METRICS === 'both' ? ' -metrics' : ' (metrics off)', env: { WEIR_METRICS: '0' } };
  if (METRICS === 'control') return [on, { suffix: ' +metrics (2)', env: {} }];
  return METRICS === 'both' ? [on, off] : METRICS === 'off' ? [off] : [on];
}

async function startWeirPostgres(v: Variant): Promise<Target> {
  const fresh = await createFreshDatabase(PG_BASE);
  return startWeir(`Weir on PostgreSQL${v.suffix}`, { DATABASE_URL: fresh.url, ...v.env }, () => openPostgres(fresh.url, { poolSize: 2 }), fresh.drop, v.endpoint, v.destination);
}

async function startWeirPglite(v: Variant): Promise<Target> {
  const dir = mkdtempSync(join(work, 'pglite-'));
  return startWeir(`Weir on PGlite${v.suffix}`, { WEIR_DATA_DIR: dir, ...v.env }, () => openPglite(dir), async () => rmSync(dir, { recursive: true, force: true }), v.endpoint, v.destination);
}

/**
 * The order of one round: bare first, then each store's variants side by
 * side. With metrics on and off the pair is reversed every other round, so
 * neither always runs right after the other's writes or in the same slot of
 * a noisy minute.
 */
function roundOrder(targets: Target[], round: number): Target[] {
  const [bare, ...weirs] = targets;
  const per = metricsVariants().length;
  const out = [bare];
  for (let i = 0; i < weirs.length; i += per) {
    const group = weirs.slice(i, i + per);
    out.push(...(round % 2 === 0 ? group.reverse() : group));
  }
  return out;
}

const bodyFile = join(work, 'body.json');
// 1 KiB of JSON shaped like a provider's event; BENCH_ROUTING=filter: 4 KiB, as issue 26's filter figure asks.
const body = providerEventBody(ROUTING === 'filter' ? 4096 : 1024);
writeFileSync(bodyFile, body);
// With BENCH_VERIFY=stripe every request carries the body's Stripe signature (made as Stripe does: HMAC-SHA256 of "{t}.{body}").
const STRIPE_T = Math.floor(Date.now() / 1000);
const SIGNATURE = VERIFY ? `t=${STRIPE_T},v1=${createHmac('sha256', STRIPE_SECRET).update(`${STRIPE_T}.${body}`).digest('hex')}` : '';

// Chosen once here, and handed to every load process, so the choice (and
// wrk's detection) is the same for every measurement of the run.
const LOAD = loadGenerator();

function load(url: string, seconds: number, idsFile = '', rate?: number): Promise<Measure> {
  return runLoad({ url, seconds, connections: CONNECTIONS, bodyFile, idsFile, rate }, { ...process.env, BENCH_LOAD: LOAD, BENCH_SIGNATURE: SIGNATURE });
}

// CPU time from /proc (Linux; elsewhere the CPU columns are left out): the
// ratio says how fast, these say where the time went. PostgreSQL counts
// every local postgres process (backends, WAL writer, checkpointer), so a
// remote BENCH_DATABASE_URL shows 0.
const PROC = existsSync('/proc/self/stat');
const TICK = 100; // USER_HZ, 100 on Linux

function cpuSeconds(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / TICK;
  } catch {
    return 0;
  }
}

/** CPU seconds of each local postgres process (a backend that exits meanwhile takes its time with it). */
function postgresSeconds(): Map<number, number> {
  const seconds = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') seconds.set(Number(entry), cpuSeconds(Number(entry)));
    } catch {
      // gone meanwhile
    }
  }
  return seconds;
}

function postgresSince(before: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of postgresSeconds()) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/** Runs a measurement and says, per request, how much CPU the server, PostgreSQL and the load generator used. */
async function measured(t: Target, run: () => Promise<Measure>): Promise<{ m: Measure; cpu?: Cpu }> {
  if (!PROC) return { m: await run() };
  const server = cpuSeconds(t.pid);
  const postgres = postgresSeconds();
  const m = await run();
  const us = (seconds: number) => (m.requests > 0 ? (seconds * 1e6) / m.requests : 0);
  return { m, cpu: { server: us(cpuSeconds(t.pid) - server), postgres: us(postgresSince(postgres)), load: us(m.loadCpu) } };
}

const cpuText = (c: Cpu | undefined) => (c ? `  CPU/req µs: server ${c.server.toFixed(1)} postgres ${c.postgres.toFixed(1)} load ${c.load.toFixed(1)}` : '');

/**
 * Before each measurement: the previous target's writes (hundreds of MB of
 * WAL and table pages per Weir round, flushed by the kernel up to 30 s
 * later) are written out now, so that writeback is not charged to whichever
 * target runs next. A target's own writes during its window still count.
 */
function settle(): void {
  try {
    execFileSync('sync');
  } catch {
    // no sync(1): measure without settling
  }
}

async function main(): Promise<void> {
  console.log(`ingest bench: ${cpus().length} CPUs (${cpus()[0]?.model}), node ${process.version}, load generator ${LOAD}, ${CONNECTIONS} connections, 1 KiB JSON, ${ROUNDS} rounds x ${SECONDS}s after ${WARMUP_SECONDS}s warm-up, then ${SECONDS}s at ${RATE}/s`);
  // BENCH_ROUTING=filter: the HTTPS receiver every capture is forwarded to (answers 200 at once)
  if (ROUTING === 'filter') receiver = await startReceiver();
  // it keeps what it received: forget it as it goes (4 KiB a capture)
  const forget = setInterval(() => receiver && (receiver.received.length = 0), 1000);
  const targets = [await startBare()];
  if (STORES.includes('postgres')) for (const v of metricsVariants()) targets.push(await startWeirPostgres(v));
  if (STORES.includes('pglite')) for (const v of metricsVariants()) targets.push(await startWeirPglite(v));
  const results = new Map<string, { m: Measure[]; cpu: Cpu[]; ids: string[] }>(targets.map((t) => [t.name, { m: [], cpu: [], ids: [] }]));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const t of roundOrder(targets, round)) {
        settle();
        await load(t.url, WARMUP_SECONDS);
        const idsFile = join(work, `ids-${round}-${t.name.replace(/\W+/g, '_')}.txt`);
        const { m, cpu } = await measured(t, () => load(t.url, SECONDS, idsFile));
        const r = results.get(t.name)!;
        r.m.push(m);
        if (cpu) r.cpu.push(cpu);
        for (const id of readFileSync(idsFile, 'utf8').split('\n')) if (id) r.ids.push(id);
        console.log(`round ${round}  ${t.name.padEnd(20)} ${m.rps.toFixed(0).padStart(7)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms  errors ${m.errors + m.timeouts}  non-2xx ${m.non2xx}${cpuText(cpu)}`);
      }
    }
    const paced = new Map<string, Measure>();
    for (const t of targets) {
      settle();
      const idsFile = join(work, `ids-paced-${t.name.replace(/\W+/g, '_')}.txt`);
      const m = await load(t.url, SECONDS, idsFile, RATE);
      paced.set(t.name, m);
      for (const id of readFileSync(idsFile, 'utf8').split('\n')) if (id) results.get(t.name)!.ids.push(id);
      console.log(`at ${RATE}/s   ${t.name.padEnd(20)} ${m.rps.toFixed(0).padStart(7)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms  errors ${m.errors + m.timeouts}  non-2xx ${m.non2xx}`);
    }
    const sideBySide = new Map<string, Array<{ rps: number; cpu: number }>>();
    if (PAIRED) {
      // Rounds taken one after the other measure the machine as much as
      // Weir: on this shared host the same bare server ran anywhere from
      // 5,000 to 60,000 req/s between rounds, far more than the 2 % asked
      // of metrics. So each pair also runs side by side: one load generator
      // each, started together, for the same seconds. Both see the same
      // moments of the machine and share its CPUs, so the one that spends
      // more per capture answers fewer. The start order alternates.
      for (let round = 1; round <= PAIR_ROUNDS; round++) {
        for (let i = 1; i < targets.length; i += 2) {
          const pair = round % 2 === 0 ? [targets[i + 1], targets[i]] : [targets[i], targets[i + 1]];
          settle();
          await Promise.all(pair.map((t) => load(t.url, WARMUP_SECONDS)));
          // (measured()'s PostgreSQL and load-generator figures mix both of the pair here: only the server's is used)
          const runs = await Promise.all(pair.map((t) => measured(t, () => load(t.url, SECONDS))));
          const line = pair.map((t, k) => {
            const { m, cpu } = runs[k];
            sideBySide.set(t.name, [...(sideBySide.get(t.name) ?? []), { rps: m.rps, cpu: cpu?.server ?? NaN }]);
            return `${t.name} ${m.rps.toFixed(0)} req/s, server CPU ${(cpu?.server ?? NaN).toFixed(1)} µs/capture, errors ${m.errors + m.timeouts}, non-2xx ${m.non2xx}`;
          });
          console.log(`side by side ${round}  ${line.join('  |  ')}`);
        }
      }
    }
    const bare = results.get(targets[0].name)!.m;
    console.log('\nsummary (median over rounds; ratio = captures/s over the same round\'s bare req/s)');
    for (const t of targets) {
      const r = results.get(t.name)!;
      const ratios = r.m.map((m, i) => m.rps / bare[i].rps);
      let check = '';
      if (t.verify) {
        const stored = await t.verify(r.ids);
        check = `  acknowledged ${r.ids.length}, stored ${stored}, missing ${r.ids.length - stored}`;
        if (stored !== r.ids.length) process.exitCode = 1;
      }
      console.log(
        `${t.name.padEnd(20)} ${median(r.m.map((m) => m.rps)).toFixed(0).padStart(7)} /s  ratio ${median(ratios).toFixed(2)}  saturated p50/p99 ${median(r.m.map((m) => m.p50))}/${median(r.m.map((m) => m.p99))} ms  at ${RATE}/s p50/p99 ${paced.get(t.name)!.p50}/${paced.get(t.name)!.p99} ms${check}`,
      );
      if (r.cpu.length > 0) {
        const med = (k: keyof Cpu) => median(r.cpu.map((c) => c[k]));
        console.log(`${''.padEnd(20)} saturated CPU per request (median): server ${med('server').toFixed(1)} µs, postgres ${med('postgres').toFixed(1)} µs, load generator ${med('load').toFixed(1)} µs`);
      }
    }
    if (PAIRED) {
      const [a, b] = ROUTING
        ? [`${ROUTING} on`, `${ROUTING} off`]
        : VERIFY
          ? ['verification on', 'verification off']
          : METRICS === 'control'
            ? ['first', 'second']
            : ['metrics on', 'metrics off'];
      const goal = ROUTING ? 'issue 26 asks >= 0.95' : VERIFY ? 'issue 25 asks >= 0.95' : 'the issue allows 0.98 for throughput';
      console.log(`\n${a} / ${b} (1.00 = no difference; ${goal})`);
      for (let i = 1; i < targets.length; i += 2) {
        const name = targets[i].name.replace(' +metrics', '').replace(' +verify', '').replace(' +filter', '').replace(' +dedup', '');
        const sequential = results.get(targets[i].name)!.m.map((m, r) => m.rps / results.get(targets[i + 1].name)!.m[r].rps);
        const on = sideBySide.get(targets[i].name)!;
        const off = sideBySide.get(targets[i + 1].name)!;
        const rps = on.map((x, r) => x.rps / off[r].rps);
        const cpu = on.map((x, r) => x.cpu / off[r].cpu);
        const sum = (xs: Array<{ rps: number }>) => xs.reduce((n, x) => n + x.rps, 0);
        const fmt = (xs: number[]) => `median ${median(xs).toFixed(3)}  range ${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)}  (${xs.map((x) => x.toFixed(3)).join(' ')})`;
        console.log(`${name.padEnd(20)} side by side, captures/s: ${fmt(rps)}  all rounds together ${(sum(on) / sum(off)).toFixed(3)}`);
        if (PROC) console.log(`${''.padEnd(20)} side by side, server CPU per capture: ${fmt(cpu)}`);
        console.log(`${''.padEnd(20)} one after the other (the rounds above), captures/s: ${fmt(sequential)}`);
      }
    }
  } finally {
    for (const t of targets) await t.stop().catch(() => {});
    clearInterval(forget);
    await receiver?.close();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
