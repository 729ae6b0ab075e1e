/**
 * Part (a) of bench/forward.ts (forwards/s through Weir: captures queued,
 * a worker drains them to an HTTPS receiver) for several work trees of
 * Weir in ONE process, alternating round by round (the order rotated each
 * cycle), so that every tree sees the same moments of a shared, noisy
 * machine: comparing commits by separate runs minutes apart measured the
 * machine more than the code. Each tree's code (worker, statements,
 * migrations, transport) is imported from that tree, with its own
 * database; the receiver is this tree's. Prints each cycle's rates and,
 * per tree, the range and median and the median of its per-cycle ratio
 * to the first tree.
 *
 *   BENCH_TREES=before:/path/to/old-worktree,after:. npm run bench:forward-trees
 *   BENCH_TREES=main:.@off,thread:.@on npm run bench:forward-trees   # one tree, two transports
 *
 * The database is PGlite in memory, or fresh PostgreSQL databases beside
 * DATABASE_URL. Env: BENCH_FORWARDS per round (default 3000), BENCH_CYCLES (default 12).
 */
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { openBenchDbWith } from './bench-db.ts';
import { BODY, CONCURRENCY, HEADERS, keptOpen } from './forward-load.ts';
import { cpuNow, cpuSince } from './forward-measure.ts';
import { median } from './stats.ts';

// name:path, or name:path@on|off|auto for that tree's WEIR_FORWARD_THREAD (the same tree twice compares the two transports)
const TREES = (process.env.BENCH_TREES ?? '').split(',').filter(Boolean).map((spec) => {
  const [t, thread = process.env.WEIR_FORWARD_THREAD] = spec.split('@');
  const at = t.indexOf(':');
  return { ...(at < 0 ? { name: t, root: resolve(t) } : { name: t.slice(0, at), root: resolve(t.slice(at + 1)) }), thread };
});
if (TREES.length < 2) throw new Error('BENCH_TREES: at least two name:path pairs, the baseline first');
const FORWARDS = Number(process.env.BENCH_FORWARDS ?? 3000);
/** WEIR_DELIVERY_HOLD_MB's default, as a literal: each tree's own config may not have it. */
const DEFAULT_HOLD_BYTES = 64 * 1024 * 1024;
const CYCLES = Number(process.env.BENCH_CYCLES ?? 12);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const receiver = fork(new URL('./forward-receiver.ts', import.meta.url), { execArgv: ['--import', 'tsx'] });
const port = await new Promise<number>((r) => receiver.once('message', (m: any) => r(m.port)));
const target = `https://127.0.0.1:${port}/hook`;

interface Tree {
  name: string;
  /** Queues `n` captures, then times one worker draining them: forwards/s, and CPU µs a forward of this process and (PostgreSQL) of the server's backends. */
  round(n: number): Promise<{ rate: number; cpuUs: number; serverUs: number }>;
  close(): Promise<void>;
}

/** One tree's Weir: every module from that tree (the same paths exist in every tree since a5e37e5). */
async function openTree(name: string, root: string, thread: string | undefined): Promise<Tree> {
  const from = (path: string) => import(`${root}/${path}`);
  const pino = createRequire(`${root}/package.json`)('pino');
  const [{ newId }, { HttpTransport }, { DeliveryWorker }, { storeCaptures }, { createOrganization }, { idTime }, { migrate }, { openPglite }, { openPostgres }, { createFreshDatabase }, { insertEndpoint }, { testCa }, { claimAheadFor, deliveryQueueFor, forwardTransport }, { loadConfig }] =
    await Promise.all(
      [
        'src/db/ids.ts', 'src/delivery/http-transport.ts', 'src/delivery/worker.ts', 'src/ingest/store.ts', 'src/orgs/organizations.ts', 'src/requests/capture-ids.ts',
        'src/db/migrate.ts', 'src/db/pglite.ts', 'src/db/postgres.ts', 'test/helpers/db.ts', 'test/helpers/fixtures.ts', 'test/helpers/https.ts',
        'src/delivery/start.ts', 'src/config.ts',
      ].map(from),
    );
  const { db, drop } = await openBenchDbWith({ migrate, openPglite, openPostgres, createFreshDatabase });
  const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
  const endpoint = await insertEndpoint(db, org.id, { forwardUrl: target });
  // the transport startDelivery gives this database (a thread of its own on PGlite since 2026-12-01; WEIR_FORWARD_THREAD), else the tree's HttpTransport
  const httpOpts = { allowPrivate: true, connectTimeoutMs: 10_000, timeoutMs: 30_000, ca: testCa().ca };
  const http = forwardTransport ? forwardTransport(db, loadConfig({ WEIR_FORWARD_THREAD: thread }), httpOpts) : new HttpTransport(httpOpts);
  // with the transport's own queue where the tree has one (Transport.queueLimit, since 2026-12-03)
  const transport = keptOpen(http);
  async function capture(n: number): Promise<void> {
    const caps = Array.from({ length: n }, () => {
      const id = newId();
      return { id, organization_id: org.id, endpoint_id: endpoint.id, received_at: new Date(idTime(id)), method: 'POST', path: '', query: '', headers: HEADERS, body: BODY, body_size: BODY.length, content_type: 'application/json', source_ip: null };
    });
    const outcomes: string[] = await storeCaptures(db, caps);
    if (outcomes.some((o) => o !== 'stored')) throw new Error(`${name}: capture group not stored`);
  }
  return {
    name,
    async round(n) {
      for (let done = 0; done < n; done += 500) await capture(Math.min(500, n - done));
      let settled = 0;
      // as that tree's startDelivery runs it (claim-ahead and the unrecorded limit, where the tree has them)
      const queue = deliveryQueueFor?.(db, { leaseMs: 60_000, forwardTimeoutMs: 30_000, concurrency: CONCURRENCY, holdBytes: DEFAULT_HOLD_BYTES }) ?? { claimAhead: claimAheadFor?.(db, 60_000, 30_000) };
      const w = new DeliveryWorker({ db, logger: pino({ level: 'warn' }), node: 'bench', transport, concurrency: CONCURRENCY, ...queue, leaseMs: 60_000, pollMs: 5_000, onSettled: () => settled++ });
      const cpu = await cpuNow(db);
      const started = performance.now();
      await w.start();
      while (settled < n) await sleep(2);
      const rate = n / ((performance.now() - started) / 1000);
      const used = await cpuSince(db, cpu);
      await w.stop();
      return { rate, cpuUs: (used.processMs * 1000) / n, serverUs: (used.serverMs * 1000) / n };
    },
    async close() {
      await http.close();
      await db.close();
      await drop();
    },
  };
}

const trees: Tree[] = [];
for (const t of TREES) trees.push(await openTree(t.name, t.root, t.thread));
console.log(`forwarding, trees alternating, on ${process.env.DATABASE_URL ? 'postgres' : 'pglite'}: ${FORWARDS} forwards a round, ${CYCLES} cycles, concurrency ${CONCURRENCY}`);
for (const t of trees) await t.round(1000); // warm-up: connections, JIT
const rates = new Map<string, number[]>(trees.map((t) => [t.name, []]));
// this process's CPU a forward (on PGlite the database's too): steadier than rates on a loaded machine
const cpus = new Map<string, number[]>(trees.map((t) => [t.name, []]));
// on PostgreSQL, the server backends' CPU a forward (the database's work there is not in this process)
const servers = new Map<string, number[]>(trees.map((t) => [t.name, []]));
const onPostgres = Boolean(process.env.DATABASE_URL);
for (let c = 0; c < CYCLES; c++) {
  for (let i = 0; i < trees.length; i++) {
    const t = trees[(i + c) % trees.length];
    const r = await t.round(FORWARDS);
    rates.get(t.name)!.push(r.rate);
    cpus.get(t.name)!.push(r.cpuUs);
    servers.get(t.name)!.push(r.serverUs);
  }
  console.log(
    `cycle ${c + 1} (load ${loadavg()[0].toFixed(1)}): ${trees.map((t) => `${t.name} ${rates.get(t.name)![c].toFixed(0)}/s, ${cpus.get(t.name)![c].toFixed(0)} µs CPU a forward${onPostgres ? ` + ${servers.get(t.name)![c].toFixed(0)} µs in the server` : ''}`).join('; ')}`,
  );
}
const base = rates.get(trees[0].name)!;
const baseCpu = cpus.get(trees[0].name)!;
const baseServer = servers.get(trees[0].name)!;
for (const t of trees) {
  const r = rates.get(t.name)!;
  const u = cpus.get(t.name)!;
  const sv = servers.get(t.name)!;
  const total = u.map((x, i) => x + sv[i]);
  console.log(
    `${t.name}: ${Math.min(...r).toFixed(0)}-${Math.max(...r).toFixed(0)}/s, median ${median(r).toFixed(0)}/s; ` +
      `÷ ${trees[0].name} per cycle: median ${median(r.map((x, i) => x / base[i])).toFixed(2)}; ` +
      `CPU a forward in this process: median ${median(u).toFixed(0)} µs, ÷ ${trees[0].name} ${median(u.map((x, i) => x / baseCpu[i])).toFixed(2)}` +
      (onPostgres ? `; with the server's: median ${median(total).toFixed(0)} µs, ÷ ${trees[0].name} ${median(total.map((x, i) => x / (baseCpu[i] + baseServer[i]))).toFixed(2)}` : ''),
  );
}
receiver.send('exit');
for (const t of trees) await t.close();
