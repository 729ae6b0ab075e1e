import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { createFreshDatabase, onPostgres } from '../helpers/db.ts';
import { insertCaptures, insertForwardDestination, type CaptureFixture } from '../helpers/fixtures.ts';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { orgWithEndpoint, waitUntil } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Node {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** `weir serve` on the shared database, trusting the test CA through NODE_EXTRA_CA_CERTS; resolves once it listens. */
async function startNode(databaseUrl: string, env: Record<string, string> = {}): Promise<Node> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('WEIR_') && k !== 'DATABASE_URL'));
  const child = spawn(process.execPath, ['bin/weir.mjs', 'serve'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...clean,
      DATABASE_URL: databaseUrl,
      WEIR_API_PORT: '0',
      WEIR_INGEST_PORT: '0',
      WEIR_ALLOW_PRIVATE_DESTINATIONS: '1',
      NODE_EXTRA_CA_CERTS: testCa().caFile,
      WEIR_LOG_LEVEL: 'warn',
      ...env,
    },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let code: number | null | undefined;
  void exited.then((c) => (code = c));
  await waitUntil(async () => {
    if (code !== undefined) throw new Error(`weir serve exited with ${code}:\n${out}`);
    return /Ingest: .*\(port \d+\)/.test(out);
  }, `weir serve to start:\n${out}`, 60_000);
  return { child, output: () => out, exited };
}

describe('several Weir nodes on one PostgreSQL', { skip: onPostgres ? false : 'needs PostgreSQL: several processes share one database' }, () => {
  let db: Db;
  let drop: () => Promise<void>;
  let url: string;
  const nodes: Node[] = [];
  const receivers: Receiver[] = [];

  before(async () => {
    const fresh = await createFreshDatabase();
    url = fresh.url;
    drop = fresh.drop;
    db = await openPostgres(url, { poolSize: 4 });
    await migrate(db);
  });
  afterEach(async () => {
    for (const n of nodes.splice(0)) {
      n.child.kill('SIGKILL');
      await n.exited;
    }
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await db.exec('truncate organizations cascade');
  });
  after(async () => {
    await db.close();
    await drop();
  });

  const webhookIds = (rx: Receiver) => rx.received.map((r) => String(r.headers['webhook-id']));
  const succeeded = async () => (await db.query<{ n: number }>(`select count(*)::int as n from deliveries where status = 'succeeded'`)).rows[0].n;

  it('share the queue and deliver every capture exactly once, pacing a rate-limited destination globally', async () => {
    const rx = await startReceiver({ reply: () => ({ status: 200, delayMs: 100 }) });
    const pacedRx = await startReceiver();
    receivers.push(rx, pacedRx);
    const ep = await orgWithEndpoint(db, `${rx.url}/hook`);
    const pacedEp = await orgWithEndpoint(db);
    await insertForwardDestination(db, pacedEp, { url: pacedRx.url, rateLimitPerMinute: 240 }); // one per 250 ms
    // a small concurrency per node, so neither node can take the whole queue alone
    nodes.push(await startNode(url, { WEIR_DELIVERY_CONCURRENCY: '4' }), await startNode(url, { WEIR_DELIVERY_CONCURRENCY: '4' }));

    const captures: CaptureFixture[] = [];
    for (let batch = 0; batch < 4; batch++) captures.push(...(await insertCaptures(db, ep, Array.from({ length: 15 }, (_, i) => ({ body: `{"b":${batch},"i":${i}}` })))));
    const pacedFrom = performance.timeOrigin + performance.now();
    await insertCaptures(db, pacedEp, Array.from({ length: 6 }, (_, i) => ({ body: `{"paced":${i}}` })));
    await waitUntil(async () => (await succeeded()) === 66 || undefined, 'all 66 deliveries to succeed', 60_000);

    assert.equal(rx.received.length, 60, 'no capture was delivered twice');
    assert.deepEqual([...new Set(webhookIds(rx))].sort(), captures.map((c) => `msg_${c.id}`).sort());
    const { rows } = await db.query<{ node: string; n: number }>(`select node, count(*)::int as n from delivery_attempts group by node`);
    assert.equal(rows.length, 2, `both nodes made attempts: ${JSON.stringify(rows)}`);
    // Global pacing: the database hands out one slot per 250 ms, whichever
    // node claims, the first at the first claim, and no node sends before its
    // slot (less the claim's round trip, allowed one interval here). So the
    // k-th arrival comes at least (k - 1) intervals after the captures were
    // stored. Only lower bounds: a busy machine can only make them later.
    // (Gaps between arrivals are not asserted: a late first and an on-time
    // second arrive close together without anything being wrong.)
    const arrivals = pacedRx.received.map((r) => r.at).sort((a, b) => a - b);
    assert.equal(arrivals.length, 6);
    for (let k = 1; k < arrivals.length; k++) {
      const after = arrivals[k] - pacedFrom;
      assert.ok(after >= (k - 1) * 250, `paced dispatch ${k} arrived ${after.toFixed(0)} ms after the captures, before its slot`);
    }

    // a graceful stop exits cleanly
    for (const n of nodes) n.child.kill('SIGTERM');
    assert.deepEqual(await Promise.all(nodes.map((n) => n.exited)), [0, 0]);
  });

  it('redeliver what a node killed mid-delivery had in flight', async () => {
    const rx = await startReceiver({ reply: () => ({ status: 200, delayMs: 1500 }) });
    receivers.push(rx);
    const ep = await orgWithEndpoint(db, rx.url);
    // a short lease so the test does not wait long for it to expire
    const env = { WEIR_FORWARD_TIMEOUT_MS: '4000', WEIR_DELIVERY_LEASE_MS: '6000', WEIR_DELIVERY_POLL_MS: '500', WEIR_DELIVERY_CONCURRENCY: '8' };
    const first = await startNode(url, env);
    nodes.push(first);
    const captures = await insertCaptures(db, ep, Array.from({ length: 20 }, (_, i) => ({ body: `{"i":${i}}` })));
    await rx.waitFor(4);
    first.child.kill('SIGKILL');
    await first.exited;
    const { rows: orphaned } = await db.query<{ n: number }>(`select count(*)::int as n from deliveries where status = 'in_flight'`);
    assert.ok(orphaned[0].n > 0, 'the killed node held leases');

    nodes.push(await startNode(url, env));
    await waitUntil(async () => (await succeeded()) === 20 || undefined, 'all 20 deliveries to succeed', 90_000);
    assert.deepEqual([...new Set(webhookIds(rx))].sort(), captures.map((c) => `msg_${c.id}`).sort(), 'every capture arrived');
    // at-least-once: only what the dead node had in flight may have arrived twice
    assert.ok(rx.received.length <= 20 + orphaned[0].n);
  });
});
