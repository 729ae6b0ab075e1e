/**
 * The sandbox's cost a warm call, alone (no database, no network): the
 * typical transformation of bench/forward.ts (drop a header, add two,
 * reshape a ~1 KiB JSON body) run N times on one capture, timed as the
 * delivery worker pays it (toSandboxInput, Sandbox.run, applyOutput) and
 * Sandbox.run alone. `npm run bench:transform-call`; BENCH_CALLS=N (default
 * 5000). Profile it with `node --cpu-prof --import tsx bench/transform-call.ts`.
 */
import { BODY, HEADERS } from './forward-load.ts';
import { applyOutput, toSandboxInput } from '../src/transformations/request.ts';
import { DEFAULT_LIMITS, Sandbox } from '../src/transformations/sandbox.ts';

export const TYPICAL = `function handler(request, context) {
  const headers = { ...request.headers, 'x-event-type': request.body.type, 'x-weir-capture': context.request_id };
  delete headers['stripe-signature'];
  const o = request.body.data.object;
  return { ...request, headers, body: { event: request.body.id, type: request.body.type, amount: o.amount / 100, currency: o.currency.toUpperCase() } };
}`;

const CALLS = Number(process.env.BENCH_CALLS ?? 5000);
const capture = { id: '01900000-0000-7000-8000-000000000001', method: 'POST', path: '/hook', query: '', headers: HEADERS, body: BODY, verification: null };
const ids = { endpointId: '01900000-0000-7000-8000-000000000002', destinationId: '01900000-0000-7000-8000-000000000003', receivedAt: new Date() };
const sandbox = new Sandbox();

async function once(): Promise<void> {
  const input = toSandboxInput(capture, capture.method, ids);
  const run = await sandbox.run(TYPICAL, input, { scope: 'bench' });
  if (!run.ok) throw new Error(run.message);
  const applied = applyOutput(run.output, capture, input.request, DEFAULT_LIMITS.maxOutputBytes);
  if (!applied.ok) throw new Error(applied.message);
}

const t0 = performance.now();
const first = await sandbox.run(TYPICAL, toSandboxInput(capture, capture.method, ids), { scope: 'bench' });
const firstMs = performance.now() - t0 - sandbox.coldStartMs;
console.log(`cold: WebAssembly instance ${sandbox.coldStartMs.toFixed(1)} ms, first run with compile ${firstMs.toFixed(1)} ms${first.ok ? '' : ` (failed: ${first.message})`}`);
for (let i = 0; i < 500; i++) await once(); // warm up the JIT
const input = toSandboxInput(capture, capture.method, ids);
/** Wall and CPU (user + system) µs a call of `fn`, over CALLS calls: the CPU figure holds on a loaded machine. */
async function per(fn: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const c = process.cpuUsage();
  const t = performance.now();
  for (let i = 0; i < CALLS; i++) await fn();
  const used = process.cpuUsage(c);
  return { wall: ((performance.now() - t) * 1000) / CALLS, cpu: (used.user + used.system) / CALLS };
}
const cpus: number[] = [];
for (let round = 1; round <= 3; round++) {
  const full = await per(once);
  const run = await per(() => sandbox.run(TYPICAL, input, { scope: 'bench' }));
  cpus.push(full.cpu);
  console.log(
    `round ${round}: as the worker pays it (input, run, output checks) ${full.cpu.toFixed(1)} µs CPU (${full.wall.toFixed(1)} µs wall); ` +
      `Sandbox.run alone ${run.cpu.toFixed(1)} µs CPU (${run.wall.toFixed(1)} µs wall) (${BODY.length}-byte body, ${CALLS} calls)`,
  );
}
console.log(`median CPU a call: ${cpus.sort((a, b) => a - b)[1].toFixed(1)} µs`);
sandbox.close();
