/**
 * The agent claim against offline agents' backlog (npm run bench:agent-claim;
 * issue 29). An agent worker claims for the agents connected to its node;
 * offline or revoked agents' deliveries wait in the same table, and must not
 * slow that claim. Measured: the median time of the real claim
 * (claimDeliveries, 32 at a time, for BENCH_CONNECTED connected agents with
 * due work, given back after each claim so every round claims the same) and
 * of the worker's wake-up query (nextDueAt) in two databases, alternating
 * round by round: one without a backlog, one with BENCH_OFFLINE agents ×
 * BENCH_EACH deliveries queued while offline (inserted with one set-based
 * statement, all older than the connected agents' own, so an index walk in
 * due order meets them first); unanalyzed, then analyzed. Prints the ratio
 * with ÷ without; the goal is ≤ 1.2.
 * The database is PGlite in memory, or a fresh PostgreSQL database beside
 * DATABASE_URL. Env: BENCH_OFFLINE (default 1000), BENCH_EACH (default 1000),
 * BENCH_CONNECTED (default 4), BENCH_ROUNDS (default 60).
 */
import { newId } from '../src/db/ids.ts';
import { claimDeliveries, nextDueAt, releaseLeases } from '../src/delivery/claim.ts';
import { createOrganization } from '../src/orgs/organizations.ts';
import { insertEndpoint } from '../test/helpers/fixtures.ts';
import { openBenchDb } from './bench-db.ts';
import { median } from './stats.ts';

const OFFLINE = Number(process.env.BENCH_OFFLINE ?? 1000);
const EACH = Number(process.env.BENCH_EACH ?? 1000);
const CONNECTED = Number(process.env.BENCH_CONNECTED ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);

/** One database: connected agents with due work (200 each, due within the last minute), and perhaps the offline backlog. */
async function open(backlog: boolean) {
  const { db, drop } = await openBenchDb();
  const org = await createOrganization(db, { name: 'Bench', plan: 'business', region: 'us' });
  const ep = await insertEndpoint(db, org.id);
  const connected = Array.from({ length: CONNECTED }, () => newId());
  await db.query(
    `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, agent_id, next_attempt_at)
     select gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'agent', a, now() - interval '1 minute' + g * interval '1 millisecond'
       from unnest($3::uuid[]) a, generate_series(1, 200) g`,
    [org.id, ep.id, connected],
  );
  if (backlog) {
    const t0 = performance.now();
    await db.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, agent_id, next_attempt_at)
       select gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'agent',
              ('00000000-0000-4000-8000-' || lpad(to_hex(g / $3::int), 12, '0'))::uuid,
              now() - interval '1 day' + g * interval '1 millisecond'
         from generate_series(0, $3::int * $4::int - 1) g`,
      [org.id, ep.id, EACH, OFFLINE],
    );
    console.log(`queued ${(OFFLINE * EACH).toLocaleString('en')} deliveries of ${OFFLINE} offline agents in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const claims: number[] = [];
  const nexts: number[] = [];
  return {
    db,
    claims,
    nexts,
    /** One claim of 32 (given back after), then the wake-up query; timed unless warming up. */
    async round(timed: boolean) {
      const t0 = performance.now();
      const { claimed } = await claimDeliveries(db, { destinationType: 'agent', agentIds: connected, limit: 32, leaseMs: 60_000, node: 'bench' });
      const t1 = performance.now();
      if (claimed.length !== 32) throw new Error(`claimed ${claimed.length}, not 32`);
      await releaseLeases(db, claimed.map((c) => c.leaseId), { keepDue: true });
      const t2 = performance.now();
      await nextDueAt(db, 'agent', connected);
      const t3 = performance.now();
      if (timed) {
        claims.push(t1 - t0);
        nexts.push(t3 - t2);
      }
    },
    async close() {
      await db.close();
      await drop();
    },
  };
}

// Both databases in this process, alternating round by round, so both see the same moments of a noisy machine.
const without = await open(false);
const withBacklog = await open(true);
const ratio = (a: number[], b: number[]) => (median(a) / median(b)).toFixed(2);
for (const phase of ['unanalyzed', 'analyzed']) {
  if (phase === 'analyzed') for (const s of [without, withBacklog]) await s.db.exec('analyze deliveries');
  for (const s of [without, withBacklog]) s.claims.length = s.nexts.length = 0;
  for (let i = 0; i < ROUNDS + 5; i++) {
    for (const s of i % 2 ? [without, withBacklog] : [withBacklog, without]) await s.round(i >= 5);
  }
  console.log(
    `${phase}: claim ${median(without.claims).toFixed(2)} ms without, ${median(withBacklog.claims).toFixed(2)} ms with: ratio ${ratio(withBacklog.claims, without.claims)}; ` +
      `wake-up query ${median(without.nexts).toFixed(2)} / ${median(withBacklog.nexts).toFixed(2)} ms: ratio ${ratio(withBacklog.nexts, without.nexts)} (medians of ${ROUNDS}; goal ≤ 1.2)`,
  );
}
await without.close();
await withBacklog.close();
