/**
 * The per-capture cost of Stripe verification as the ingest listener pays
 * it (issue 25, docs/verification.md "Measured"): verifyRequest on a
 * prepared Verifier with wrk's headers and a 1 KiB body, the metrics hook,
 * and the three more elements of the capture's JSON in the capture
 * statement, against the same capture without verification. CPU of the
 * whole process (every thread) and wall time per call, in rounds.
 *
 *   node --import tsx bench/verify-path.ts
 *
 * It also prints the bytes of heap each path allocates a call, read as the
 * growth of the used heap over 20,000 calls; that needs a young generation
 * no call fills (otherwise it prints n/a):
 *
 *   node --max-semi-space-size=128 --min-semi-space-size=128 --import tsx bench/verify-path.ts
 */
import { createHmac } from 'node:crypto';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { headerPairs } from '../src/ingest/request-parts.ts';
import { prepareVerifier } from '../src/verification/settings.ts';
import { verifyRequest } from '../src/verification/verify.ts';
import { providerEventBody } from './weir-process.ts';

const N = Number(process.env.BENCH_CALLS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECRET = 'whsec_0123456789abcdef0123456789abcdef0123456789abcdef';
const body = Buffer.from(providerEventBody(1024));
const t = Math.floor(Date.now() / 1000);
const signature = `t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex')}`;
// What wrk sends (bench/ingest-wrk.lua), in node's rawHeaders form.
const rawHeaders = ['Host', '127.0.0.1:8080', 'Content-Length', String(body.length), 'Content-Type', 'application/json', 'Stripe-Signature', signature];
const verifier = prepareVerifier({ provider: 'stripe', enforce: false, tolerance_seconds: 300, header: null, algorithm: null, encoding: null, prefix: null }, SECRET, null, null, '');
const request = { rawHeaders, body, slug: 'abc', path: '', query: '' };
const counts = { verified: 0, failed: 0 };

function time(name: string, fn: () => unknown): { cpu: number; wall: number } {
  for (let i = 0; i < 10_000; i++) fn();
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for (let i = 0; i < N; i++) fn();
  const wall = ((performance.now() - wall0) * 1000) / N;
  const c = process.cpuUsage(cpu0);
  return { cpu: (c.user + c.system) / N, wall };
}

const paths: Record<string, () => unknown> = {
  'verifyRequest + metrics hook': () => {
    const r = verifyRequest(verifier, request);
    counts[r.status]++;
    return r;
  },
  'capture JSON, with verification': () => JSON.stringify([['POST', '', '', headerPairs(rawHeaders), 'application/json', '127.0.0.1', 'verified', null, false]]),
  'capture JSON, without': () => JSON.stringify([['POST', '', '', headerPairs(rawHeaders), 'application/json', '127.0.0.1']]),
};
/** Heap bytes a call; undefined when the young generation is too small to hold 20,000 calls without a collection. */
function allocated(fn: () => unknown): number | undefined {
  const calls = 20_000;
  const young = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
  if (young < 64 * 1024 * 1024) return undefined;
  for (let i = 0; i < calls; i++) fn();
  const before = getHeapStatistics().used_heap_size;
  for (let i = 0; i < calls; i++) fn();
  const grown = getHeapStatistics().used_heap_size - before;
  return grown > 0 ? grown / calls : undefined;
}

if (verifyRequest(verifier, request).status !== 'verified') throw new Error('the bench signature does not verify');
console.log(
  'heap allocated a call: ' +
    Object.entries(paths)
      .map(([name, fn]) => `${name}: ${allocated(fn)?.toFixed(0) ?? 'n/a'} bytes`)
      .join('  |  '),
);
for (let round = 1; round <= ROUNDS; round++) {
  const line = Object.entries(paths).map(([name, fn]) => {
    const r = time(name, fn);
    return `${name}: CPU ${r.cpu.toFixed(2)} µs, wall ${r.wall.toFixed(2)} µs`;
  });
  console.log(`round ${round}  ${line.join('  |  ')}`);
}
