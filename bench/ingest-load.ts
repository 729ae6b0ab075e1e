// The load generator of bench/ingest.ts, in its own process so that the
// server under test is not slowed by sharing an event loop with it.
// argv: url seconds connections bodyFile idsFile [rate]. With a rate (requests
// per second over all connections) the load is paced instead of as fast as
// the server answers. Prints one JSON line (with the load generator's own
// CPU seconds while it ran).
//
// BENCH_LOAD picks the generator: `wrk` (C; Debian's package of that name)
// or `autocannon` (JavaScript, an npm dependency). The default is wrk when it
// is installed: on a 2-core machine the load generator shares the cores with
// the server and the database, and autocannon spends 15-30 µs of CPU per
// request against wrk's few, which would be taken from the server under test
// (docs/capture.md, Performance).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [url, seconds, connections, bodyFile, idsFile, rate] = process.argv.slice(2);

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  acked: number;
  loadCpu: number;
}

export function loadGenerator(): 'wrk' | 'autocannon' {
  const chosen = process.env.BENCH_LOAD;
  if (chosen === 'wrk' || chosen === 'autocannon') return chosen;
  if (chosen) throw new Error(`BENCH_LOAD must be wrk or autocannon, not ${chosen}`);
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return 'wrk';
  } catch (err) {
    // wrk --version prints its banner and exits 1; only a missing binary is ENOENT.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'autocannon' : 'wrk';
  }
}

async function withWrk(): Promise<LoadResult> {
  const script = fileURLToPath(new URL('./ingest-wrk.lua', import.meta.url));
  // One thread: it keeps up with 50 connections and leaves the second core
  // to the server and the database.
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, url];
  const env = { ...process.env, BENCH_BODY_FILE: bodyFile, BENCH_IDS_FILE: idsFile ?? '', BENCH_CONNECTIONS: connections, BENCH_RATE: rate ?? '' };
  const proc = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => proc.once('exit', resolve));
  const line = /^WRK (\{.*\})$/m.exec(out)?.[1];
  if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}):\n${out}`);
  const r = JSON.parse(line) as Omit<LoadResult, 'rps'> & { seconds: number };
  return { ...r, rps: r.requests / r.seconds };
}

async function withAutocannon(): Promise<LoadResult> {
  const { default: autocannon } = await import('autocannon');
  const body = readFileSync(bodyFile, 'utf8');
  const ids: string[] = [];
  const cpuBefore = process.cpuUsage();
  const result = await autocannon({
    url,
    method: 'POST',
    connections: Number(connections),
    duration: Number(seconds),
    ...(rate ? { overallRate: Number(rate) } : {}),
    // BENCH_SIGNATURE (BENCH_VERIFY=stripe in bench/ingest.ts): the body's Stripe-Signature
    headers: { 'content-type': 'application/json', ...(process.env.BENCH_SIGNATURE ? { 'stripe-signature': process.env.BENCH_SIGNATURE } : {}) },
    requests: [
      {
        method: 'POST',
        body,
        // Every server answers {request_id}; keeping the ids lets the bench
        // check afterwards that everything acknowledged is really stored.
        onResponse: (status: number, text: string) => {
          if (status >= 200 && status < 300) ids.push(JSON.parse(text).request_id);
        },
      },
    ],
  });
  const cpu = process.cpuUsage(cpuBefore);
  if (idsFile) writeFileSync(idsFile, ids.join('\n'));
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    acked: ids.length,
    loadCpu: (cpu.user + cpu.system) / 1e6,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = loadGenerator() === 'wrk' ? await withWrk() : await withAutocannon();
  process.stdout.write(JSON.stringify(result) + '\n');
}
