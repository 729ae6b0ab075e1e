/**
 * Agent benchmark (npm run bench:agent). Prints ratios against a baseline
 * measured in the same run:
 *  (a) throughput: forwards/s through the real `weir agent` process to a
 *      local HTTP server, divided by forwards/s through an https destination
 *      to the same server's HTTPS twin (same handler, its own process), in
 *      alternating rounds; the median ratio is the figure (target >= 0.8);
 *  (b) ingest-to-agent latency p50/p99: webhooks POSTed to the real ingest
 *      listener at a fixed rate (open loop), timed to their arrival.
 * The gateway runs in this process on its own HTTP listener, as on a node;
 * the agent is the real CLI. PGlite in memory, or a fresh PostgreSQL
 * database beside DATABASE_URL. Env: BENCH_FORWARDS (default 2000), BENCH_SECONDS (default 5).
 */
import { fork, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Agent } from 'undici';
import { enrollAgent } from '../src/agents/agents.ts';
import { AgentGateway } from '../src/agents/gateway.ts';
import { loadConfig } from '../src/config.ts';
import { newId } from '../src/db/ids.ts';
import { HttpTransport } from '../src/delivery/http-transport.ts';
import { DeliveryWorker } from '../src/delivery/worker.ts';
import { startIngest } from '../src/ingest/server.ts';
import { storeCaptures } from '../src/ingest/store.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { DEFAULT_PLANS } from '../src/orgs/plans.ts';
import { idTime } from '../src/requests/capture-ids.ts';
import type { Capture } from '../src/requests/captures.ts';
import { openBenchDb } from './bench-db.ts';
import { insertEndpoint, insertForwardDestination } from '../test/helpers/fixtures.ts';
import { testCa } from '../test/helpers/https.ts';
import { WEIR_BIN, cleanEnv, ROOT } from '../test/helpers/weir-process.ts';

const FORWARDS = Number(process.env.BENCH_FORWARDS ?? 2000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const BODY = Buffer.from(JSON.stringify({ id: 'evt_bench', type: 'charge.succeeded', data: { object: { amount: 2000, currency: 'usd', pad: 'x'.repeat(800) } } }));
const HEADERS: Array<[string, string]> = [
  ['Content-Type', 'application/json'],
  ['Stripe-Signature', 't=1700000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd'],
];
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (v: number[], p: number) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor((p / 100) * v.length))] ?? NaN;

const receiver = fork(new URL('./agent-receiver.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
const ports = await new Promise<{ http: number; https: number }>((resolve) => receiver.once('message', (m: any) => resolve(m)));
const arrivals = () =>
  new Promise<Map<string, number>>((resolve) => {
    receiver.once('message', (m: any) => resolve(new Map(m.arrivals)));
    receiver.send('report');
  });

const { db, drop } = await openBenchDb();
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
const httpsEndpoint = await insertEndpoint(db, org.id, { forwardUrl: `https://127.0.0.1:${ports.https}/hook` });
const agentEndpoint = await insertEndpoint(db, org.id);
const enrolled = await enrollAgent(db, { organizationId: org.id, name: 'bench', environment: 'production', createdBy: null }, DEFAULT_PLANS);
if (!enrolled.ok) throw new Error('enrollment failed');
await insertForwardDestination(db, agentEndpoint, { agentId: enrolled.agent.id, targetPort: ports.http, targetPath: '/hook' });

async function capture(endpointId: string, n: number): Promise<void> {
  const caps: Capture[] = Array.from({ length: n }, () => {
    const id = newId();
    return { id, organization_id: org.id, endpoint_id: endpointId, received_at: new Date(idTime(id)), method: 'POST', path: '', query: '', headers: HEADERS, body: BODY, body_size: BODY.length, content_type: 'application/json', source_ip: null };
  });
  const outcomes = await storeCaptures(db, caps);
  if (outcomes.some((o) => o !== 'stored')) throw new Error('capture group not stored');
}

// Both workers run for the whole benchmark, as on a node: the https worker
// with the default concurrency, the gateway's for the agent.
const config = loadConfig({ WEIR_LOG_LEVEL: 'warn' });
const logger = pino({ level: 'warn' });
const settled = { https: 0, agent: 0 };
const httpsWorker = new DeliveryWorker({
  db,
  logger,
  node: 'bench',
  transport: new HttpTransport({ allowPrivate: true, connectTimeoutMs: 10_000, timeoutMs: 30_000, ca: testCa().ca }),
  concurrency: config.deliveryConcurrency,
  leaseMs: config.deliveryLeaseMs,
  pollMs: config.deliveryPollMs,
  onSettled: () => settled.https++,
});
await httpsWorker.start();
const server = createServer();
const gateway = new AgentGateway({ db, config, logger, node: 'bench', onSettled: () => settled.agent++ });
await gateway.start(server);
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const agentProcess = spawn(process.execPath, [WEIR_BIN, 'agent', '--server', `http://127.0.0.1:${(server.address() as AddressInfo).port}`, '--token', enrolled.token, '--json'], {
  cwd: ROOT,
  env: cleanEnv(),
  stdio: ['ignore', 'pipe', 'inherit'],
});
let agentOut = '';
agentProcess.stdout!.on('data', (d: Buffer) => (agentOut.length < 10_000 ? (agentOut += d) : undefined));
while (!agentOut.includes('"event":"connected"')) await sleep(20);

/** Forwards/s from the first capture written to the last outcome recorded. */
async function round(kind: 'https' | 'agent', n: number): Promise<number> {
  const target = settled[kind] + n;
  const started = now();
  for (let done = 0; done < n; done += 500) await capture(kind === 'https' ? httpsEndpoint.id : agentEndpoint.id, Math.min(500, n - done));
  while (settled[kind] < target) await sleep(2);
  return n / ((now() - started) / 1000);
}

console.log(`agent benchmark on ${db.kind}, ${FORWARDS} forwards per round, ${BODY.length}-byte body`);
await round('https', 500);
await round('agent', 500);
const rounds: Array<{ https: number; agent: number }> = [];
for (let r = 0; r < 3; r++) rounds.push({ https: await round('https', FORWARDS), agent: await round('agent', FORWARDS) });
const ratios = rounds.map((r) => r.agent / r.https).sort((a, b) => a - b);
console.log(`(a) throughput: ${rounds.map((r) => `https ${r.https.toFixed(0)}/s vs agent ${r.agent.toFixed(0)}/s`).join('; ')}; median ratio agent/https ${ratios[1].toFixed(2)} (target >= 0.8)`);

const ingest = await startIngest({ db, config, logger }, 0);
const client = new Agent();
const slug = agentEndpoint.slug;
await arrivals();
const scheduled = new Map<string, number>();
const rate = 20;
const latencyTarget = settled.agent + rate * SECONDS;
const sends: Promise<void>[] = [];
const start = now() + 50;
for (let i = 0; i < rate * SECONDS; i++) {
  const at = start + (i * 1000) / rate;
  if (at > now()) await sleep(at - now());
  sends.push(
    client
      .request({ origin: `http://127.0.0.1:${ingest.port}`, path: `/h/${slug}`, method: 'POST', headers: HEADERS.flat(), body: BODY })
      .then(async (res) => void scheduled.set(`msg_${((await res.body.json()) as { request_id: string }).request_id}`, at)),
  );
}
await Promise.all(sends);
while (settled.agent < latencyTarget) await sleep(5);
const got = await arrivals();
const lat = [...scheduled].map(([id, at]) => (got.get(id) ?? NaN) - at).filter((x) => !Number.isNaN(x));
console.log(`(b) ingest-to-agent latency, ${rate}/s for ${SECONDS} s (${lat.length} of ${scheduled.size} webhooks arrived): p50 ${percentile(lat, 50).toFixed(1)} ms, p99 ${percentile(lat, 99).toFixed(1)} ms`);

agentProcess.kill('SIGINT');
await new Promise((r) => agentProcess.once('exit', r));
await gateway.stop();
await httpsWorker.stop();
server.close();
await ingest.close();
await client.close();
receiver.send('exit');
await db.close();
await drop();
