/**
 * Where the extra CPU of Stripe verification goes (issue 25,
 * docs/verification.md "Measured"): two real `weir serve` processes, one
 * endpoint each, Stripe verification on one and off on the other, loaded
 * side by side with the same signed 1 KiB requests (wrk, 50 connections
 * each), as `BENCH_VERIFY=stripe npm run bench:ingest` does. For each it
 * prints, per capture: the CPU of every thread of the process
 * (/proc/<pid>/task/<tid>/stat, by thread name), the capture group size
 * (weir_capture_group_size), and the main thread's V8 CPU profile summed by
 * function, with the functions whose time differs most between the two.
 *
 *   node --import tsx bench/verify-profile.ts                 # PGlite
 *   DATABASE_URL=postgres://... node --import tsx bench/verify-profile.ts
 *   BENCH_SECONDS=10 BENCH_PROFILE_DIR=/tmp/verify-prof ...
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFreshDatabase } from '../test/helpers/db.ts';
import { providerEventBody, runLoad, spawnWeir, type WeirProcess } from './weir-process.ts';
import { median } from './stats.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const PG = process.env.DATABASE_URL;
const work = mkdtempSync(join(tmpdir(), 'weir-verify-prof-'));
const profileDir = process.env.BENCH_PROFILE_DIR ?? join(work, 'prof');
// BENCH_PERF=1: also `perf record` each process (user-mode CPU, native
// frames such as OpenSSL's included) during the measurement.
const PERF = process.env.BENCH_PERF === '1';
const PERF_HZ = 1999;
// BENCH_PROFILE=0: no V8 profile (the profiler's own threads and overhead left out of the CPU figures).
const PROFILE = process.env.BENCH_PROFILE !== '0';
const SECRET = 'whsec_' + randomBytes(24).toString('hex');
const body = providerEventBody(1024);
const bodyFile = join(work, 'body.json');
writeFileSync(bodyFile, body);
const t = Math.floor(Date.now() / 1000);
const SIGNATURE = `t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex')}`;
const TICK = 100;

/** CPU seconds of each thread of `pid`, by "name/tid". */
function threads(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      out.set(`${name}/${tid === String(pid) ? 'main' : tid}`, (Number(f[11]) + Number(f[12])) / TICK);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Page faults of the whole process (minor, major: /proc/<pid>/stat) and the main thread's context switches (voluntary, involuntary). */
function processCounters(pid: number): number[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const num = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return [Number(f[7]), Number(f[9]), num('voluntary_ctxt_switches'), num('nonvoluntary_ctxt_switches')];
}

async function groupSizes(w: WeirProcess): Promise<{ sum: number; count: number }> {
  const text = await (await fetch(`${w.api}/metrics`)).text();
  const num = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { sum: num('weir_capture_group_size_sum'), count: num('weir_capture_group_size_count') };
}

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Self time (µs) by function over the profile's samples between `from` and `to` (µs before the profile's end). */
function selfTimes(p: Profile, from: number, to: number): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  let clock = p.startTime;
  const interval = median(p.timeDeltas);
  for (let i = 0; i < p.samples.length; i++) {
    clock += p.timeDeltas[i];
    const before = p.endTime - clock;
    if (before > from || before < to) continue;
    // A sample counts as one interval: on a busy machine a descheduled
    // thread's next sample carries a long delta that says nothing of where
    // its CPU went.
    const dt = interval;
    const f = byId.get(p.samples[i])!.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${f.lineNumber + 1}`;
    out.set(key, (out.get(key) ?? 0) + dt);
  }
  return out;
}

/** Which part of the process a native symbol belongs to. */
function perfGroup(symbol: string): string {
  if (/sha\d+_block|sha1_block|OPENSSL|ossl_|EVP_|HMAC|CRYPTO_|evp_|hmac|pthread_rwlock|node::crypto/.test(symbol)) return 'OpenSSL and node::crypto';
  if (/ConcurrentMarking|Sweeper|Marking|Scaveng|MarkCompact|Heap::|GlobalHandles|BaseObject|WeakCallback|Evacuat|RememberedSet|Worklist|IteratePointers|Visit/.test(symbol)) return 'garbage collection, handles, native wrappers';
  if (/malloc|free|memset|memmove|memcpy|unlink_chunk|consolidate/.test(symbol)) return 'malloc, free, memory copies';
  if (/wasm|\(perf-|JIT|\[unknown\]|unknown/.test(symbol)) return 'JIT code (JavaScript, WebAssembly: PGlite)';
  if (/compiler::|Compile|Turbofan|Maglev/.test(symbol)) return 'V8 compilers';
  if (/Builtins_|v8::internal|v8::/.test(symbol)) return 'V8 builtins and runtime';
  if (/uv_|uv__|llhttp|node::/.test(symbol)) return 'libuv, HTTP parser, node';
  return 'other';
}

/** perf's user-mode samples by symbol, as µs per capture, both processes side by side. */
function printPerf(captures: number[]): void {
  const bySymbol = [0, 1].map((i) => {
    const out = new Map<string, number>();
    const text = execFileSync('perf', ['report', '-i', join(work, `perf-${i}.data`), '--stdio', '--sort', 'dso,sym', '--no-children', '-g', 'none', '-F', 'sample,dso,sym'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
    for (const line of text.split('\n')) {
      const m = /^\s+(\d+)\s+(\S+)\s+\[.\]\s+(.*)$/.exec(line);
      if (m) out.set(`${m[3].trim()} (${m[2]})`, ((Number(m[1]) * 1e6) / PERF_HZ) / captures[i]);
    }
    return out;
  });
  const total = bySymbol.map((m) => [...m.values()].reduce((a, b) => a + b, 0));
  console.log(`\nperf, user-mode CPU per capture: +verify ${total[0].toFixed(1)} µs, -verify ${total[1].toFixed(1)} µs; largest differences (on, off, on - off):`);
  const groups = [0, 1].map((i) => {
    const out = new Map<string, number>();
    for (const [k, v] of bySymbol[i]) out.set(perfGroup(k), (out.get(perfGroup(k)) ?? 0) + v);
    return out;
  });
  console.log('  by part (on, off, on - off):');
  for (const g of [...groups[0].keys()].sort((a, b) => (groups[0].get(b) ?? 0) - (groups[0].get(a) ?? 0))) {
    const on = groups[0].get(g) ?? 0;
    const off = groups[1].get(g) ?? 0;
    console.log(`    ${on.toFixed(2).padStart(7)} ${off.toFixed(2).padStart(7)} ${(on - off).toFixed(2).padStart(7)}  ${g}`);
  }
  const keys = new Set([...bySymbol[0].keys(), ...bySymbol[1].keys()]);
  const rows = [...keys].map((k) => ({ k, on: bySymbol[0].get(k) ?? 0, off: bySymbol[1].get(k) ?? 0 })).sort((a, b) => Math.abs(b.on - b.off) - Math.abs(a.on - a.off));
  for (const r of rows.slice(0, Number(process.env.BENCH_TOP ?? 40))) console.log(`  ${r.on.toFixed(2).padStart(7)} ${r.off.toFixed(2).padStart(7)} ${(r.on - r.off).toFixed(2).padStart(7)}  ${r.k}`);
}

async function main(): Promise<void> {
  const verification = { provider: 'stripe', secret: SECRET, tolerance_seconds: 86_400 };
  const fresh = PG ? [await createFreshDatabase(PG), await createFreshDatabase(PG)] : [];
  const store = (i: number): Record<string, string> => (PG ? { DATABASE_URL: fresh[i].url } : { WEIR_DATA_DIR: mkdtempSync(join(work, 'pglite-')) });
  const extra = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
  const args = (name: string) => [...extra, ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}/${name}`] : []), ...(PERF ? ['--perf-basic-prof'] : [])];
  const on = await spawnWeir('+verify', store(0), { name: 'bench', verification }, args('on'));
  const off = await spawnWeir('-verify', store(1), { name: 'bench' }, args('off'));
  const pair = [
    { name: '+verify', w: on },
    { name: '-verify', w: off },
  ];
  try {
    const env = { ...process.env, BENCH_LOAD: 'wrk', BENCH_SIGNATURE: SIGNATURE };
    const load = (w: WeirProcess, seconds: number) => runLoad({ url: w.ingestUrl, seconds, connections: 50, bodyFile }, env);
    await Promise.all(pair.map((p) => load(p.w, WARMUP)));
    const before = pair.map((p) => threads(p.w.pid));
    const countersBefore = pair.map((p) => processCounters(p.w.pid));
    const groupsBefore = await Promise.all(pair.map((p) => groupSizes(p.w)));
    const windowFrom = Date.now();
    const perf = PERF
      ? pair.map((p, i) => {
          const proc = spawn('perf', ['record', '-q', '-g', '-e', 'cpu-clock:u', '-F', String(PERF_HZ), '-p', String(p.w.pid), '-o', join(work, `perf-${i}.data`), '--', 'sleep', String(SECONDS)], { stdio: 'ignore' });
          return new Promise((resolve) => proc.once('exit', resolve));
        })
      : [];
    const results = await Promise.all(pair.map((p) => load(p.w, SECONDS)));
    await Promise.all(perf);
    const windowTo = Date.now();
    const after = pair.map((p) => threads(p.w.pid));
    const countersAfter = pair.map((p) => processCounters(p.w.pid));
    const groupsAfter = await Promise.all(pair.map((p) => groupSizes(p.w)));
    for (let i = 0; i < pair.length; i++) {
      const n = results[i].requests;
      const g = { sum: groupsAfter[i].sum - groupsBefore[i].sum, count: groupsAfter[i].count - groupsBefore[i].count };
      let total = 0;
      const lines: string[] = [];
      for (const [name, s] of after[i]) {
        const us = ((s - (before[i].get(name) ?? 0)) * 1e6) / n;
        total += us;
        if (us >= 0.5) lines.push(`    ${name.padEnd(24)} ${us.toFixed(1)} µs`);
      }
      console.log(`${pair[i].name}: ${results[i].rps.toFixed(0)} captures/s, ${n} captures, errors ${results[i].errors + results[i].timeouts}, non-2xx ${results[i].non2xx}, mean group ${(g.sum / g.count).toFixed(1)} (${g.count} groups)`);
      console.log(`  CPU per capture, every thread: ${total.toFixed(1)} µs`);
      const c = countersAfter[i].map((v, k) => (v - countersBefore[i][k]) / n);
      console.log(`  per capture: minor page faults ${c[0].toFixed(3)}, major ${c[1].toFixed(4)}, main thread context switches ${c[2].toFixed(3)} voluntary, ${c[3].toFixed(3)} involuntary`);
      for (const l of lines) console.log(l);
    }
    if (PERF) printPerf(results.map((r) => r.requests));
    if (extra.length > 0) for (const p of pair) writeFileSync(`${process.env.BENCH_NODE_OUT ?? '/tmp/verify-profile'}${p.name}.txt`, p.w.output());
    if (process.env.BENCH_PERF_KEEP) for (let i = 0; i < 2; i++) execFileSync('cp', [join(work, `perf-${i}.data`), `${process.env.BENCH_PERF_KEEP}-${i}.data`]);
    const stoppedAt = Date.now();
    await Promise.all(pair.map((p) => p.w.stop()));
    if (!PROFILE) return;
    // The main thread's profile over the measured window, per capture.
    const prof = pair.map((p, i) => {
      const dir = `${profileDir}/${i === 0 ? 'on' : 'off'}`;
      const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!;
      const times = selfTimes(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile, (stoppedAt - windowFrom) * 1000, (stoppedAt - windowTo) * 1000);
      for (const [k, v] of times) times.set(k, v / results[i].requests);
      return times;
    });
    for (let i = 0; i < 2; i++) {
      const sum = [...prof[i].values()].reduce((a, b) => a + b, 0);
      const idle = prof[i].get('(idle) :0') ?? 0;
      console.log(`${pair[i].name} main thread profile: ${sum.toFixed(1)} µs a capture sampled, ${(sum - idle).toFixed(1)} not idle`);
    }
    const keys = new Set([...prof[0].keys(), ...prof[1].keys()]);
    const diffs = [...keys].map((k) => ({ k, on: prof[0].get(k) ?? 0, off: prof[1].get(k) ?? 0 })).sort((a, b) => Math.abs(b.on - b.off) - Math.abs(a.on - a.off));
    console.log('\nmain thread self time per capture, µs (on, off, on - off), largest differences:');
    for (const d of diffs.slice(0, Number(process.env.BENCH_TOP ?? 40))) console.log(`  ${d.on.toFixed(2).padStart(7)} ${d.off.toFixed(2).padStart(7)} ${(d.on - d.off).toFixed(2).padStart(7)}  ${d.k}`);
    console.log('\nlargest self times, +verify:');
    for (const [k, v] of [...prof[0]].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${v.toFixed(2).padStart(7)}  ${k}`);
  } finally {
    await Promise.all(pair.map((p) => p.w.stop()));
    for (const f of fresh) await f.drop();
    if (!process.env.BENCH_PROFILE_DIR) rmSync(work, { recursive: true, force: true });
  }
}

await main();
