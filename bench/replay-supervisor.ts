/**
 * Replay supervisor benchmark (npm run bench:replay-supervisor): the time
 * of one supervisor tick (src/delivery/replay-batch.ts
 * superviseReplayBatches) with 1,000 and then 1,000,000 replay deliveries
 * in running batches, and the ratio. Before each tick BENCH_CHANGES of the
 * batches' deliveries are delivered (status and attempt count changed, as
 * the completion statement does), so every tick has real changes to fold.
 * Goal (issue 29): ratio <= 2, the tick costing what changed, not the
 * batches' size. For scale it also prints what the progress query of
 * before (counting every delivery of the running batches) takes at each size.
 *
 * Deliveries are inserted with set-based SQL (generate_series), half of
 * them waiting, the rest delivered or failed, and each batch's progress row
 * counted from them once, as createReplayBatch counts a new batch.
 * The database is PGlite in memory, or a fresh PostgreSQL database beside
 * DATABASE_URL when it is set.
 * Env: BENCH_SMALL (default 1000), BENCH_LARGE (default 1000000),
 * BENCH_BATCHES (running batches, default 2), BENCH_TICKS (default 20),
 * BENCH_CHANGES (deliveries changed before each tick, default 10).
 */
import pino from 'pino';
import type { Db } from '../src/db/db.ts';
import { newId } from '../src/db/ids.ts';
import { superviseReplayBatches } from '../src/incidents/replay.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { seedIncident } from '../test/incidents/helpers.ts';
import { openBenchDb } from './bench-db.ts';
import { median } from './stats.ts';

const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 2);
const TICKS = Number(process.env.BENCH_TICKS ?? 20);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 10);
const log = pino({ level: process.env.LOG_LEVEL ?? 'info' });

const { db, drop } = await openBenchDb();
const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
const seeded = await seedIncident(db, org.id, { n: 1 });
const { rows: fdRows } = await db.query<{ url: string }>(`select url from forward_destinations where id = $1::uuid`, [seeded.destinationId]);
const batchIds = Array.from({ length: BATCHES }, () => newId());

await db.query(
  `insert into replay_batches (id, organization_id, incident_id, requests_per_minute, queued_count, running_since)
   select b, $2::uuid, $3::uuid, 6000, 0, now() from unnest($1::uuid[]) as b`,
  [batchIds, org.id, seeded.incidentId],
);
await db.query(`insert into replay_batch_progress (replay_batch_id, waiting) select b, 0 from unnest($1::uuid[]) as b`, [batchIds]);
await db.query(`insert into replay_batch_pacing (replay_batch_id, requests_per_minute) select b, 6000 from unnest($1::uuid[]) as b`, [batchIds]);

/** Adds `n` deliveries spread over the batches, set-based, and counts them into the batches' progress. */
async function addDeliveries(n: number): Promise<void> {
  for (let done = 0; done < n; done += 100_000) {
    const k = Math.min(100_000, n - done);
    await db.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type, url,
                               replay_batch_id, status, attempt_count, next_attempt_at)
       select gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, $3::uuid, 'https', $4,
              ($5::uuid[])[1 + i % $6], case when i % 2 = 0 then 'pending' when i % 10 = 1 then 'failed' else 'succeeded' end,
              case when i % 2 = 0 then 0 else 1 end, now() + interval '1 day'
         from generate_series(1, $7::int) as i`,
      [org.id, seeded.endpoint.id, seeded.destinationId, fdRows[0].url, batchIds, BATCHES, k],
    );
  }
  // counted once from the deliveries, as a new batch is counted when it is created
  await db.query(
    `update replay_batch_progress p
        set waiting = c.waiting, succeeded = c.succeeded, failed = c.failed
       from (select replay_batch_id,
                    count(*) filter (where status in ('pending', 'in_flight'))::int as waiting,
                    count(*) filter (where status = 'succeeded')::int as succeeded,
                    count(*) filter (where status in ('failed', 'dead'))::int as failed
               from deliveries where replay_batch_id = any($1::uuid[]) group by replay_batch_id) c
      where p.replay_batch_id = c.replay_batch_id`,
    [batchIds],
  );
  await db.query(`update replay_batches b set queued_count = (select waiting + succeeded + failed from replay_batch_progress where replay_batch_id = b.id)`);
  await db.exec('analyze deliveries; analyze replay_batch_progress; analyze replay_batch_changes');
}

/** Delivers `CHANGES` waiting deliveries as the completion statement would: a new status and attempt, in one statement. */
async function change(): Promise<void> {
  const { rowCount } = await db.query(
    `update deliveries set status = 'succeeded', attempt_count = attempt_count + 1, last_attempt_at = now(), last_status_code = 200, updated_at = now()
      where id in (select id from deliveries where status = 'pending' and replay_batch_id = any($1::uuid[]) limit $2)`,
    [batchIds, CHANGES],
  );
  if (rowCount !== CHANGES) throw new Error(`changed ${rowCount} deliveries, expected ${CHANGES}`);
}

/** Median ms of a supervisor tick, each after CHANGES deliveries changed; and of the old whole-batch progress query. */
async function measure(db: Db): Promise<{ tick: number; oldQuery: number }> {
  await change();
  await superviseReplayBatches(db); // warm
  const ticks: number[] = [];
  for (let i = 0; i < TICKS; i++) {
    await change();
    const t0 = performance.now();
    const r = await superviseReplayBatches(db);
    ticks.push(performance.now() - t0);
    if (r.finished.length + r.paused.length > 0) throw new Error('a batch changed state: the bench would measure that instead');
  }
  const old: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await db.query(
      `select replay_batch_id, count(*) filter (where status in ('pending', 'in_flight'))::int, count(*) filter (where status = 'succeeded')::int,
              count(*) filter (where status in ('failed', 'dead'))::int
         from deliveries where replay_batch_id = any($1::uuid[]) group by replay_batch_id`,
      [batchIds],
    );
    old.push(performance.now() - t0);
  }
  return { tick: median(ticks), oldQuery: median(old) };
}

const where = process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite';
await addDeliveries(SMALL);
const small = await measure(db);
log.info({ deliveries: SMALL, tickMs: small.tick, beforeProgressQueryMs: small.oldQuery }, 'small');
const t0 = performance.now();
await addDeliveries(LARGE - SMALL);
log.info({ seconds: (performance.now() - t0) / 1000 }, 'inserted the large set');
const large = await measure(db);
log.info({ deliveries: LARGE, tickMs: large.tick, beforeProgressQueryMs: large.oldQuery }, 'large');

const fmt = (n: number) => n.toFixed(2);
console.log(`\nreplay supervisor tick on ${where}, ${BATCHES} running batches, ${CHANGES} deliveries changed before each tick, median of ${TICKS} ticks:`);
console.log(`  ${SMALL.toLocaleString('en')} deliveries: ${fmt(small.tick)} ms   (the progress query of before: ${fmt(small.oldQuery)} ms)`);
console.log(`  ${LARGE.toLocaleString('en')} deliveries: ${fmt(large.tick)} ms   (the progress query of before: ${fmt(large.oldQuery)} ms)`);
console.log(`  ratio ${fmt(large.tick / small.tick)} (goal <= 2)`);
await db.close();
await drop();
