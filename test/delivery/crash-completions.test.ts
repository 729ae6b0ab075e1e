import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { insertCaptures } from '../helpers/fixtures.ts';
import { startReceiver, testCa } from '../helpers/https.ts';
import { freshStore, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';
import { orgWithEndpoint, waitUntil } from './helpers.ts';

// Outcomes are recorded in groups (CompletionBatcher): answers that arrive
// while one group is being written wait for the next statement. A process
// killed after destinations answered but before the group holding those
// answers committed has lost them: the deliveries must go again (at least
// once), and the answers that were committed must not be recorded a second
// time by the retry.

const CAPTURES = 60;
/** Answers held back, then released together with the kill: one group's worth, answered and not yet recorded. */
const HELD = 10;

function openStore(store: Store): Promise<Db> {
  return store.env.DATABASE_URL ? openPostgres(store.env.DATABASE_URL, { poolSize: 2 }) : openPglite(store.env.WEIR_DATA_DIR!);
}

// On PGlite the second process holds the folder, so whether it has settled everything is read from its metrics (settled, below).
test('a kill -9 between the destinations answering and the group of outcomes committing loses nothing and records no success twice', { timeout: 600_000 }, async (t) => {
  const store = await freshStore();
  t.after(() => store.drop());
  let weir: WeirProcess | undefined;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // requests 20 to 20 + HELD - 1 are answered only when the gate opens, together, right before the kill; the rest at once
  const rx = await startReceiver({ reply: (_req, index) => (index >= 20 && index < 20 + HELD ? { status: 200, until: gate } : { status: 200 }) });
  t.after(() => rx.close());

  const db = await openStore(store);
  let ids: string[];
  try {
    await migrate(db);
    const ep = await orgWithEndpoint(db, `${rx.url}/hook`);
    ids = (await insertCaptures(db, ep, Array.from({ length: CAPTURES }, (_, i) => ({ body: `{"i":${i}}` })))).map((c) => c.id);
  } finally {
    // PGlite: the folder belongs to one process at a time
    await db.close();
  }

  // The held answers must not time out before they are released (a loaded machine is slow to send the
  // first 20), and no lease may expire under a live process; on PostgreSQL (no release of orphaned
  // leases at start) the dead process's leases are requeued when they expire.
  const env = {
    ...store.env,
    WEIR_ALLOW_PRIVATE_DESTINATIONS: '1',
    NODE_EXTRA_CA_CERTS: testCa().caFile,
    WEIR_FORWARD_TIMEOUT_MS: '30000',
    WEIR_DELIVERY_LEASE_MS: '35000',
    WEIR_DELIVERY_POLL_MS: '1000',
  };
  weir = await startWeirProcess(env, 300_000);
  t.after(() => weir?.stop('SIGKILL'));
  await rx.waitFor(20 + HELD, 120_000);
  // every held request has arrived: answer them all, and kill the process right after the answers are written
  const killed = weir;
  release();
  // the held answers are written in this turn's microtasks; the kill follows them at once
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(await killed.stop('SIGKILL'), null, 'killed by the signal');

  const sentBefore = rx.received.length;
  weir = await startWeirProcess(env, 300_000);
  // twice in a row: one scrape reads the queue before the attempt counters, so an outcome recorded in between
  // (a retry scheduled) could look settled once
  let streak = 0;
  await waitUntil(async () => ((streak = (await settled(weir!, store, rx.received.length - sentBefore)) ? streak + 1 : 0) >= 2) || undefined, 'the second process to settle every delivery', 240_000);
  assert.equal(await weir.stop('SIGTERM'), 0);
  weir = undefined;
  const arrived = () => new Set(rx.received.map((r) => String(r.headers['webhook-id'])));

  const check = await openStore(store);
  try {
    assert.deepEqual([...arrived()].sort(), ids!.map((id) => `msg_${id}`).sort(), 'every capture arrived: at least once');
    const { rows: statuses } = await check.query<{ status: string; n: number }>(`select status, count(*)::int as n from deliveries group by status`);
    assert.deepEqual(statuses, [{ status: 'succeeded', n: CAPTURES }]);
    const { rows: twice } = await check.query<{ delivery_id: string; n: number }>(
      `select delivery_id, count(*)::int as n from delivery_attempts where status_code between 200 and 299 group by delivery_id having count(*) > 1`,
    );
    assert.deepEqual(twice, [], 'no delivery has two attempts recorded as succeeded');
    // the queue's count agrees with the history: no attempt row written twice, none counted without its row
    const { rows: mismatched } = await check.query<{ id: string }>(
      `select d.id from deliveries d left join delivery_attempts a on a.delivery_id = d.id group by d.id, d.attempt_count having d.attempt_count <> count(a.id)`,
    );
    assert.deepEqual(mismatched, []);
    const { rows: numbers } = await check.query<{ n: number }>(
      `select count(*)::int as n from (select delivery_id, attempt_number from delivery_attempts group by 1, 2 having count(*) > 1) x`,
    );
    assert.equal(numbers[0].n, 0, 'no attempt number recorded twice for one delivery');
    // The answers released with the kill reached their destination but were
    // not recorded by the killed process (recording needs the answer read, a
    // group formed and a commit; the kill was sent as the answers were
    // written), so those captures were sent again by the next process.
    assert.ok(rx.received.length > CAPTURES, `answered-but-unrecorded deliveries were sent again (${rx.received.length} requests for ${CAPTURES} captures)`);
  } finally {
    await check.close();
  }
});


/**
 * Whether the second process has settled everything: on PostgreSQL, asked
 * of the database (the dead process's leases are requeued when they
 * expire); on PGlite, whose folder the process holds, from its metrics:
 * nothing pending (its start released every orphaned lease) and every
 * request it sent recorded as an attempt.
 */
async function settled(weir: WeirProcess, store: Store, sentSinceStart: number): Promise<boolean> {
  if (store.env.DATABASE_URL) {
    const db = await openPostgres(store.env.DATABASE_URL, { poolSize: 1 });
    try {
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from deliveries where status <> 'succeeded'`);
      return rows[0].n === 0;
    } finally {
      await db.close();
    }
  }
  const text = await (await fetch(`${weir.base}/metrics`)).text();
  const depth = Number(/^weir_delivery_queue_depth (\S+)$/m.exec(text)?.[1] ?? NaN);
  const recorded = [...text.matchAll(/^weir_delivery_attempts_total\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  return depth === 0 && sentSinceStart > 0 && recorded === sentSinceStart;
}
