import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { setStatements, type Queryable, type Settings } from '../../src/db/db.ts';
import { newId } from '../../src/db/ids.ts';
import { CLAIM_SETTINGS, claimDeliveries, NEXT_DUE, NEXT_DUE_OF_AGENTS, nextDueAt, PACING_HORIZON_MS } from '../../src/delivery/claim.ts';
import {
  CLAIM_DUE,
  CLAIM_DUE_OF_AGENTS,
  CLAIM_DUE_OF_AGENTS_PACING_BATCHES,
  CLAIM_DUE_PACING_BATCHES,
  type ClaimRow,
  PACING_LATE_MS,
} from '../../src/delivery/claim-statement.ts';
import { insertEndpoint, insertForwardDestination, type EndpointFixture } from '../helpers/fixtures.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { assertIndexWalkFunction, genericPlanOf, INDEX_WALK_SETTINGS } from '../helpers/plans.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { storeCaptures } from '../../src/ingest/store.ts';
import type { Capture } from '../../src/requests/captures.ts';
import { idTime } from '../../src/requests/capture-ids.ts';

// The four claim statements (src/delivery/claim-statement.ts) are written
// out whole; these checks run on each, so that they cannot drift apart,
// and each checks the property its comment claims.

let t: TestDb;
let ep: EndpointFixture;
before(async () => {
  t = await openTestDb();
});
after(() => t.close());
beforeEach(async () => {
  await t.reset();
  const org = await createOrganization(t.db, { name: 'Acme', plan: 'business', region: 'us' });
  ep = await insertEndpoint(t.db, org.id);
});

const ROLLBACK = new Error('rollback');
/** Runs fn in a transaction with the claim's plan settings, then undoes everything it did. */
async function rolledBack<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
  let out: T | undefined;
  await t.db
    .transaction(
      async (tx) => {
        out = await fn(tx);
        throw ROLLBACK;
      },
      { settings: setStatements(CLAIM_SETTINGS) },
    )
    .catch((err) => {
      if (err !== ROLLBACK) throw err;
    });
  return out as T;
}

async function insertAgent(): Promise<string> {
  const id = newId();
  await t.db.query(`insert into agents (id, organization_id, name, environment, token_hash) values ($1::uuid, $2::uuid, 'laptop', 'production', $3::bytea)`, [
    id,
    ep.organization_id,
    Buffer.from(id),
  ]);
  return id;
}

interface Queued {
  agentId?: string | null;
  /** how long ago it came due (negative: not due yet) */
  dueMsAgo: number;
  destinationId?: string | null;
  batchId?: string | null;
}

/** Waiting deliveries, inserted as rows; returns their ids in the order given. */
async function queue(rows: Queued[]): Promise<string[]> {
  const ids = rows.map(() => newId());
  await t.db.query(
    `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, forward_destination_id, destination_type,
                             url, agent_id, next_attempt_at, replay_batch_id)
     select r.id, $2::uuid, gen_random_uuid(), now(), $3::uuid, r.fd, case when r.agent is null then 'https' else 'agent' end,
            case when r.agent is null then 'https://example.com/hook' end, r.agent, now() - r.ago * interval '1 millisecond', r.batch
       from unnest($1::uuid[], $4::uuid[], $5::int[], $6::uuid[], $7::uuid[]) as r(id, agent, ago, fd, batch)`,
    [ids, ep.organization_id, ep.id, rows.map((r) => r.agentId ?? null), rows.map((r) => r.dueMsAgo), rows.map((r) => r.destinationId ?? null), rows.map((r) => r.batchId ?? null)],
  );
  return ids;
}

async function insertPacedBatch(requestsPerMinute: number): Promise<string> {
  const incident = newId();
  const batch = newId();
  await t.db.query(
    `insert into incidents (id, organization_id, scope_key, first_failure_at, last_failure_at) values ($1::uuid, $2::uuid, 'fd:x', now(), now())`,
    [incident, ep.organization_id],
  );
  await t.db.query(
    `insert into replay_batches (id, organization_id, incident_id, requests_per_minute, queued_count) values ($1::uuid, $2::uuid, $3::uuid, $4, 0)`,
    [batch, ep.organization_id, incident, requestsPerMinute],
  );
  await t.db.query(`insert into replay_batch_pacing (replay_batch_id, requests_per_minute, next_slot_at) values ($1::uuid, $2, now())`, [batch, requestsPerMinute]);
  return batch;
}

interface Variant {
  name: string;
  sql: string;
  batches: boolean;
  agents: boolean;
}
const VARIANTS: Variant[] = [
  { name: 'CLAIM_DUE', sql: CLAIM_DUE, batches: false, agents: false },
  { name: 'CLAIM_DUE_PACING_BATCHES', sql: CLAIM_DUE_PACING_BATCHES, batches: true, agents: false },
  { name: 'CLAIM_DUE_OF_AGENTS', sql: CLAIM_DUE_OF_AGENTS, batches: false, agents: true },
  { name: 'CLAIM_DUE_OF_AGENTS_PACING_BATCHES', sql: CLAIM_DUE_OF_AGENTS_PACING_BATCHES, batches: true, agents: true },
];

/** Runs one claim statement (committed) as claimDeliveries does. */
async function claimWith(v: Variant, who: string | string[], limit: number): Promise<ClaimRow[]> {
  return t.db.withSettings(CLAIM_SETTINGS, async (q) => (await q.query<ClaimRow>(v.sql, [who, limit, PACING_HORIZON_MS, 60_000, 'test-node', randomUUID()])).rows);
}

async function pendingState(): Promise<string> {
  const { rows } = await t.db.query(`select id, status, next_attempt_at, paced_slot, lease_id from deliveries order by id`);
  const pacing = await t.db.query(`select * from destination_pacing order by destination_id`);
  const batches = await t.db.query(`select * from replay_batch_pacing order by replay_batch_id`);
  return JSON.stringify([rows, pacing.rows, batches.rows]);
}

for (const v of VARIANTS) {
  describe(v.name, () => {
    /** Its kind's deliveries: https ones, or those of one connected agent (another agent's are offline). */
    async function kinds() {
      const connected = await insertAgent();
      const offline = await insertAgent();
      const mine = (q: Omit<Queued, 'agentId'>): Queued => ({ ...q, agentId: v.agents ? connected : null });
      return { connected, offline, who: v.agents ? [connected] : 'https', mine };
    }

    it('leases the oldest due deliveries of its kind, up to the limit, and nothing else', async () => {
      const k = await kinds();
      const ids = await queue([
        k.mine({ dueMsAgo: 1_000 }),
        k.mine({ dueMsAgo: 5_000 }),
        k.mine({ dueMsAgo: 3_000 }),
        k.mine({ dueMsAgo: 2_000 }),
        k.mine({ dueMsAgo: -60_000 }), // not due yet
        // older, but not its kind: another type, or an agent that is not connected here
        { agentId: v.agents ? null : k.connected, dueMsAgo: 9_000 },
        { agentId: k.offline, dueMsAgo: 9_000 },
      ]);
      const rows = await claimWith(v, k.who, 3);
      assert.deepEqual(rows.map((r) => r.id).sort(), [ids[1], ids[2], ids[3]].sort());
      for (const r of rows) {
        assert.equal(r.status, 'in_flight');
        assert.ok(r.lease_id);
      }
      assert.equal(typeof rows[0].paced_batches === 'boolean', v.batches, 'only the statement with batch pacing says whether batches are paced');
      const again = await claimWith(v, k.who, 10);
      assert.deepEqual(again.map((r) => r.id), [ids[0]], 'a leased delivery is not claimed again');
    });

    it('gives every delivery of a claim its own lease id, and a delivery claimed again a new one', async () => {
      const k = await kinds();
      const ids = await queue([k.mine({ dueMsAgo: 3_000 }), k.mine({ dueMsAgo: 2_000 }), k.mine({ dueMsAgo: 1_000 })]);
      const first = await claimWith(v, k.who, 10);
      assert.deepEqual(first.map((r) => r.id).sort(), [...ids].sort());
      const leases = first.map((r) => r.lease_id!);
      assert.equal(new Set(leases).size, 3, 'one lease id a delivery');
      for (const l of leases) assert.match(l, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      // the lease ran out: the same delivery claimed again (a new claim, a new seed) gets a lease id of its own
      await t.db.query(`update deliveries set status = 'pending', lease_id = null, lease_until = null where id = $1`, [ids[0]]);
      const again = await claimWith(v, k.who, 10);
      assert.deepEqual(again.map((r) => r.id), [ids[0]]);
      assert.ok(!leases.includes(again[0].lease_id!), 'a new claim, a new lease id');
    });

    it('returns what it leased in due order, then by id, however the rows were inserted (the order the worker launches them in)', async () => {
      const k = await kinds();
      // inserted newest first and, among equal due times, ids descending
      const ids = [newId(), newId(), newId(), newId()].sort().reverse();
      await t.db.query(
        `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, url, agent_id, next_attempt_at)
         select r.id, $2::uuid, gen_random_uuid(), now(), $3::uuid, case when $4::uuid is null then 'https' else 'agent' end,
                case when $4::uuid is null then 'https://example.com/hook' end, $4::uuid, now() - r.ago * interval '1 millisecond'
           from unnest($1::uuid[], $5::int[]) with ordinality as r(id, ago, n) order by r.n`,
        [ids, ep.organization_id, ep.id, v.agents ? k.connected : null, [1_000, 1_000, 1_000, 2_000]],
      );
      const rows = await claimWith(v, k.who, 10);
      assert.deepEqual(rows.map((r) => r.id), [ids[3], ids[2], ids[1], ids[0]]);
    });

    it('returns its times as epoch milliseconds whose whole part is the timestamp\'s millisecond, whatever its microseconds', async () => {
      const k = await kinds();
      const ids = await queue([k.mine({ dueMsAgo: 3 }), k.mine({ dueMsAgo: 2 }), k.mine({ dueMsAgo: 1 })]);
      // microseconds that a float8 of seconds times 1000 would round across the millisecond
      const received = ['2026-11-28 12:00:00.123+00', '2026-11-28 12:00:00.999999+00', '2026-11-28 12:00:00.000001+00'];
      for (const [i, id] of ids.entries()) await t.db.query(`update deliveries set request_received_at = $2::timestamptz where id = $1::uuid`, [id, received[i]]);
      const rows = await claimWith(v, k.who, 10);
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.deepEqual(
        ids.map((id) => Math.floor(byId.get(id)!.request_received_ms!)),
        [Date.UTC(2026, 10, 28, 12, 0, 0, 123), Date.UTC(2026, 10, 28, 12, 0, 0, 999), Date.UTC(2026, 10, 28, 12, 0, 0, 0)],
      );
      assert.ok(Math.abs(rows[0].db_now_ms - Date.now()) < 60_000, 'the database\'s clock, in epoch milliseconds');
    });

    it('gives the deliveries of a rate-limited destination slots 60 s / rate apart', async () => {
      const k = await kinds();
      const fd = await insertForwardDestination(t.db, ep, v.agents ? { agentId: k.connected, rateLimitPerMinute: 60 } : { rateLimitPerMinute: 60 });
      await queue([k.mine({ dueMsAgo: 3, destinationId: fd.id }), k.mine({ dueMsAgo: 2, destinationId: fd.id }), k.mine({ dueMsAgo: 1, destinationId: fd.id })]);
      const rows = await claimWith(v, k.who, 10);
      const slots = rows.map((r) => Math.round(r.paced_slot_ms!)).sort((a, b) => a - b);
      assert.deepEqual([slots[1] - slots[0], slots[2] - slots[1]], [1000, 1000]);
      // within the horizon: leased now, to wait in memory; beyond it: written back as pending until the slot
      assert.deepEqual(rows.map((r) => r.status).sort(), ['in_flight', 'in_flight', 'pending']);
    });

    it('keeps a slot missed by less than PACING_LATE_MS, and gives up one missed by more for the next free slot', async () => {
      const k = await kinds();
      const fd = await insertForwardDestination(t.db, ep, v.agents ? { agentId: k.connected, rateLimitPerMinute: 60 } : { rateLimitPerMinute: 60 });
      // the line is busy: the next free slot is 5 s away
      await t.db.query(`insert into destination_pacing (destination_id, next_slot_at) values ($1::uuid, now() + interval '5 seconds')`, [fd.id]);
      const [onTime, missed] = await queue([k.mine({ dueMsAgo: 100, destinationId: fd.id }), k.mine({ dueMsAgo: PACING_LATE_MS + 1_000, destinationId: fd.id })]);
      // as a claim writes back a delivery whose slot is beyond the horizon: due at its slot
      await t.db.query(`update deliveries set paced_slot = next_attempt_at`);
      const { rows: was } = await t.db.query<{ id: string; paced_slot: Date }>(`select id, paced_slot from deliveries`);
      const slotWas = new Map(was.map((r) => [r.id, new Date(r.paced_slot).getTime()]));
      const rows = await claimWith(v, k.who, 10);
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.equal(byId.get(onTime)!.status, 'in_flight');
      assert.equal(Math.floor(byId.get(onTime)!.paced_slot_ms!), slotWas.get(onTime), 'a slot missed by 100 ms is kept');
      assert.equal(byId.get(missed)!.status, 'pending', 'the next free slot is beyond the horizon');
      assert.ok(Math.floor(byId.get(missed)!.paced_slot_ms!) - slotWas.get(missed)! >= 5_000, 'the missed slot was given up for the next free one');
    });

    if (!v.batches) {
      it('claims nothing and changes nothing while a replay batch is paced (the caller runs the statement with batch pacing)', async () => {
        const k = await kinds();
        await insertPacedBatch(60);
        await queue([k.mine({ dueMsAgo: 1_000 }), k.mine({ dueMsAgo: 2_000 })]);
        const before = await pendingState();
        assert.deepEqual(await claimWith(v, k.who, 10), []);
        assert.equal(await pendingState(), before);
        const viaClaim = await claimDeliveries(t.db, { destinationType: v.agents ? 'agent' : 'https', agentIds: v.agents ? [k.connected] : null, limit: 10, leaseMs: 60_000, node: 'n', pacedBatches: false });
        assert.equal(viaClaim.claimed.length, 2, 'claimDeliveries does not trust the hint: it claims with batch pacing');
        assert.equal(viaClaim.pacedBatches, true);
      });
    } else {
      it('paces a replay batch\'s deliveries at the batch\'s rate, instead of their destination\'s', async () => {
        const k = await kinds();
        const fd = await insertForwardDestination(t.db, ep, v.agents ? { agentId: k.connected, rateLimitPerMinute: 6000 } : { rateLimitPerMinute: 6000 });
        const batch = await insertPacedBatch(30);
        await queue([1, 2, 3].map((n) => k.mine({ dueMsAgo: n, destinationId: fd.id, batchId: batch })));
        const rows = await claimWith(v, k.who, 10);
        const slots = rows.map((r) => Math.round(r.paced_slot_ms!)).sort((a, b) => a - b);
        assert.deepEqual([slots[1] - slots[0], slots[2] - slots[1]], [2000, 2000]);
        const { rows: pacing } = await t.db.query<{ n: number }>(`select count(*)::int as n from destination_pacing`);
        assert.equal(pacing[0].n, 0, 'the destination\'s own pacing is left alone');
        assert.equal(rows[0].paced_batches, true);
      });
    }

    it("returns each capture's body byte for byte: JSON, binary, empty and 2 MiB", async () => {
      const k = await kinds();
      await insertForwardDestination(t.db, ep, v.agents ? { agentId: k.connected } : {});
      const sent = await storeBodies();
      const rows = await claimWith(v, k.who, 10);
      assert.equal(rows.length, sent.size);
      for (const r of rows) assert.ok(Buffer.isBuffer(r.body) && r.body.equals(sent.get(r.request_id)!), `the body of ${r.request_id}`);
    });
  });
}

/**
 * The bodies a forward must carry unchanged, stored through the real
 * capture statement (one group); by capture id. An agent forward once
 * arrived with an empty body when a claim statement returned no body
 * (test/agents/link.test.ts saw it only through Stripe's signature check).
 */
async function storeBodies(): Promise<Map<string, Buffer>> {
  const bodies = [
    Buffer.from('{"id":"evt_agent","object":"event","type":"invoice.paid"}'),
    Buffer.from([0, 255, 1, 254, 0x80, 0x0d, 0x0a, 0xc3, 0x28]),
    Buffer.alloc(0),
    Buffer.alloc(2 * 1024 * 1024, 7),
  ];
  const captures = bodies.map((body) => {
    const id = newId();
    return { id, organization_id: ep.organization_id, endpoint_id: ep.id, received_at: new Date(idTime(id)), method: 'POST', path: '', query: '', headers: [], body, body_size: body.length, content_type: null, source_ip: null } satisfies Capture;
  });
  assert.deepEqual(await storeCaptures(t.db, captures), ['stored', 'stored', 'stored', 'stored']);
  return new Map(captures.map((c) => [c.id, c.body]));
}

describe('claimDeliveries, as the worker runs it (a named statement, on PGlite inside the claim transaction)', () => {
  for (const agents of [false, true]) {
    it(`hands each ${agents ? 'agent' : 'https'} delivery its capture's exact body`, async () => {
      const agentId = agents ? await insertAgent() : undefined;
      await insertForwardDestination(t.db, ep, agents ? { agentId } : {});
      const sent = await storeBodies();
      // twice: the first claim prepares the statement, the second runs it prepared
      const claimed = [];
      for (const n of [2, 10]) {
        const { claimed: got } = await claimDeliveries(t.db, { destinationType: agents ? 'agent' : 'https', agentIds: agents ? [agentId!] : null, limit: n, leaseMs: 60_000, node: 'test-node' });
        claimed.push(...got);
      }
      assert.equal(claimed.length, sent.size);
      for (const d of claimed) assert.ok(d.capture?.body.equals(sent.get(d.requestId)!), `the body of ${d.requestId}`);
    });
  }
});

describe('CLAIM_DUE_OF_AGENTS takes what CLAIM_DUE would, filtered to the connected agents', () => {
  it('the `limit` oldest due of those agents, whatever the limit and however their queues interleave', async () => {
    const agents = [await insertAgent(), await insertAgent(), await insertAgent(), await insertAgent()];
    let seed = 7;
    const rand = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    await queue(Array.from({ length: 60 }, () => ({ agentId: agents[Math.floor(rand() * 4)], dueMsAgo: Math.floor(rand() * 100_000) - 10_000 })));
    const connected = agents.slice(0, 3);
    for (const limit of [1, 5, 12, 40, 100]) {
      const [expected, got] = await rolledBack(async (tx) => {
        const { rows: e } = await tx.query<{ id: string }>(
          `select id from deliveries where status = 'pending' and destination_type = 'agent' and agent_id = any($1::uuid[]) and next_attempt_at <= now()
            order by next_attempt_at limit $2`,
          [connected, limit],
        );
        const { rows: g } = await tx.query<ClaimRow>(CLAIM_DUE_OF_AGENTS, [connected, limit, PACING_HORIZON_MS, 60_000, 'n', randomUUID()]);
        return [e.map((r) => r.id).sort(), g.map((r) => r.id).sort()];
      });
      assert.deepEqual(got, expected, `limit ${limit}`);
    }
  });

  it('a connected agent listed twice is claimed for once', async () => {
    const a = await insertAgent();
    await queue([{ agentId: a, dueMsAgo: 10 }, { agentId: a, dueMsAgo: 20 }]);
    const rows = await claimWith(VARIANTS[2], [a, a], 10);
    assert.equal(rows.length, 2);
  });
});

describe('the agent claim reads only the connected agents\' queues', () => {
  // 200 offline agents with 50 due deliveries each, all older than the
  // connected agents' own: on deliveries_due the claim stepped over all
  // 10,000 before reaching one it could take.
  const OFFLINE = 200;
  const EACH = 50;

  // The wake-up questions (NEXT_DUE, NEXT_DUE_OF_AGENTS) are asked through functions (migration 0025)
  // whose settings hold while their queries are planned: each function's query is planned here as the
  // function plans it, after checking that it is the function's query and that the settings are on it.
  const WAKE_UP_QUERIES = {
    deliveries_next_due: {
      arg: 'kind',
      query: `select d.next_attempt_at from deliveries d
           where d.status = 'pending' and d.destination_type = $1
           order by d.next_attempt_at limit 1`,
      walks: /Index (Only )?Scan using deliveries_due on deliveries d\b/,
    },
    deliveries_next_due_of_agents: {
      arg: 'agent_ids',
      query: `select min(first.at)
            from (select distinct unnest($1::uuid[])) as a(agent_id)
           cross join lateral (select q.next_attempt_at as at from deliveries q
                                where q.status = 'pending' and q.destination_type = 'agent' and q.agent_id = a.agent_id
                                order by q.next_attempt_at limit 1) first`,
      walks: /Index (Only )?Scan using deliveries_agent_queue on deliveries q\b/,
    },
  };
  async function assertWakeUpWalks() {
    assert.match(NEXT_DUE, /deliveries_next_due\(\$1::text\)/);
    assert.match(NEXT_DUE_OF_AGENTS, /deliveries_next_due_of_agents\(\$1::uuid\[\]\)/);
    for (const [name, { arg, query, walks }] of Object.entries(WAKE_UP_QUERIES)) {
      await assertIndexWalkFunction(t.db, name, query.replace('$1::uuid[]', arg).replace('$1', arg));
      const plan = await genericPlanOf(t.db, query, 1, INDEX_WALK_SETTINGS);
      assert.match(plan, walks, plan);
      assert.doesNotMatch(plan, /Seq Scan on deliveries|Bitmap/, plan);
    }
  }

  async function backlog() {
    const connected = [await insertAgent(), await insertAgent()];
    await t.db.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, agent_id, next_attempt_at)
       select gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'agent',
              ('00000000-0000-4000-8000-' || lpad(to_hex(g / $3::int), 12, '0'))::uuid, now() - interval '1 day' + g * interval '1 millisecond'
         from generate_series(0, $3::int * $4::int - 1) g`,
      [ep.organization_id, ep.id, EACH, OFFLINE],
    );
    await queue(connected.flatMap((agentId) => [1, 2, 3].map((n) => ({ agentId, dueMsAgo: n * 1000 }))));
    return connected;
  }

  async function planOf(sql: string, params: unknown[], settings: Settings = {}): Promise<string> {
    return rolledBack(async (tx) => {
      if (Object.keys(settings).length > 0) await tx.exec(setStatements(settings));
      const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off, timing off) ${sql}`, params);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  }

  function assertAgentWalk(plan: string) {
    assert.match(plan, /Index (Only )?Scan using deliveries_agent_queue on deliveries/, plan);
    assert.doesNotMatch(plan, /deliveries_due\b|Seq Scan on deliveries|Bitmap/, plan);
    // nothing read and thrown away: no offline agent's row reaches a filter
    assert.doesNotMatch(plan, /Rows Removed by (Join )?Filter: \d{3,}/, plan);
  }

  it('the wake-up time and the claims, prepared: their generic plans read their queue\'s index, never the table, before and after it is analyzed', async () => {
    await backlog();
    for (const analyzed of [false, true]) {
      if (analyzed) await t.db.exec('analyze deliveries');
      await assertWakeUpWalks();
      // the claims as the worker runs them (CLAIM_SETTINGS): each walks its queue's index and fetches what it
      // leased, and their captures, by primary key
      for (const sql of [CLAIM_DUE_OF_AGENTS, CLAIM_DUE_OF_AGENTS_PACING_BATCHES]) assertAgentWalk(await genericPlanOf(t.db, sql, 6, CLAIM_SETTINGS));
      for (const sql of [CLAIM_DUE, CLAIM_DUE_PACING_BATCHES]) {
        const plan = await genericPlanOf(t.db, sql, 6, CLAIM_SETTINGS);
        assert.match(plan, /Index Scan using deliveries_due on deliveries d\b/, plan);
        assert.doesNotMatch(plan, /Seq Scan on deliveries|Bitmap Heap Scan on deliveries/, plan);
      }
      for (const sql of [CLAIM_DUE, CLAIM_DUE_OF_AGENTS]) {
        const plan = await genericPlanOf(t.db, sql, 6, CLAIM_SETTINGS);
        assert.match(plan, /Index Scan using deliveries_pkey on deliveries d_1/, plan);
        assert.doesNotMatch(plan, /Seq Scan on captured_requests/, plan);
      }
    }
  });

  it('the wake-up time and the claims, prepared while the queue is analyzed at one row: still their queue\'s index, never the table', async () => {
    // a node started on a quiet database: table maintenance analyzed the queue small, then the
    // statements were prepared; their generic plans stay for the connection's life as the queue grows
    await queue([{ agentId: await insertAgent(), dueMsAgo: 1000 }]);
    await t.db.exec('analyze deliveries');
    await assertWakeUpWalks();
    for (const sql of [CLAIM_DUE, CLAIM_DUE_PACING_BATCHES, CLAIM_DUE_OF_AGENTS, CLAIM_DUE_OF_AGENTS_PACING_BATCHES]) {
      const plan = await genericPlanOf(t.db, sql, 6, CLAIM_SETTINGS);
      assert.doesNotMatch(plan, /Seq Scan on deliveries|Bitmap Heap Scan on deliveries/, plan);
    }
  });

  it('the wake-up time is the earliest due time of the connected agents (or of the type), in this process\'s clock', async () => {
    const [a, b] = [await insertAgent(), await insertAgent()];
    const at = (ms: number) => new Date(Date.parse('2031-05-06T07:08:09.123Z') + ms).toISOString();
    await t.db.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, agent_id, next_attempt_at)
       values (gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'agent', $3::uuid, $5::timestamptz),
              (gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'agent', $4::uuid, $6::timestamptz),
              (gen_random_uuid(), $1::uuid, gen_random_uuid(), now(), $2::uuid, 'agent', $4::uuid, $7::timestamptz)`,
      [ep.organization_id, ep.id, a, b, at(5_000), at(2_000), at(9_000)],
    );
    // twice: the first run prepares the named statement, the second runs it prepared
    for (let run = 0; run < 2; run++) {
      // the database's clock and this process's are the same machine's here: apart by a statement's round trip at most;
      // the due times are seconds apart, so the wrong one is never near
      const near = (got: number | null, iso: string) => assert.ok(got !== null && Math.abs(got - Date.parse(iso)) < 250, `${got} near ${iso}`);
      near(await nextDueAt(t.db, 'agent', [a]), at(5_000));
      near(await nextDueAt(t.db, 'agent', [a, b]), at(2_000));
      near(await nextDueAt(t.db, 'agent', null), at(2_000));
      assert.equal(await nextDueAt(t.db, 'agent', []), null);
      assert.equal(await nextDueAt(t.db, 'https'), null, 'nothing of that type waits');
    }
  });

  it('claim and wake-up time walk deliveries_agent_queue per connected agent, before and after the table is analyzed', async () => {
    const connected = await backlog();
    for (const analyzed of [false, true]) {
      if (analyzed) await t.db.exec('analyze deliveries');
      const claim = await planOf(CLAIM_DUE_OF_AGENTS, [connected, 32, PACING_HORIZON_MS, 60_000, 'n', randomUUID()]);
      assertAgentWalk(claim);
      // each head is fetched and locked by its id, not matched against a walk of a whole index
      assert.match(claim, /CTE Scan on heads h[^\n]*\n(\s+(Storage|Buffers):[^\n]*\n)*\s*-> {2}Index Scan using deliveries_pkey on deliveries d \(/, claim);
      assert.doesNotMatch(claim, /Scan using (?!deliveries_pkey )\w+ on deliveries d \(/, claim);
      // the index scans read the 6 connected rows, and the claim leases them
      assert.match(claim, /Update on deliveries/, claim);
      assertAgentWalk(await planOf(CLAIM_DUE_OF_AGENTS_PACING_BATCHES, [connected, 32, PACING_HORIZON_MS, 60_000, 'n', randomUUID()]));
      // the wake-up's query as its function runs it (migration 0025), with the connected agents
      assertAgentWalk(await planOf(WAKE_UP_QUERIES.deliveries_next_due_of_agents.query, [connected], INDEX_WALK_SETTINGS));
    }
    const { claimed } = await claimDeliveries(t.db, { destinationType: 'agent', agentIds: connected, limit: 32, leaseMs: 60_000, node: 'n' });
    assert.equal(claimed.length, 6);
    assert.equal(await nextDueAt(t.db, 'agent', connected), null, 'nothing of theirs waits');
  });
});

describe('the claim commits without waiting for the WAL flush, and nothing else does', () => {
  it('synchronous_commit is off for the claim statements only: every other connection is on after claims, so captures stay durable when acknowledged', async () => {
    await insertForwardDestination(t.db, ep, {});
    await storeBodies();
    const read = async (q: Queryable) =>
      (await q.query<{ s: string }>(`select current_setting('synchronous_commit') || ' ' || current_setting('enable_seqscan') || ' ' || current_setting('enable_bitmapscan') as s`)).rows[0].s;
    assert.equal(await t.db.withSettings(CLAIM_SETTINGS, read), 'off off off', 'as the claim statements run');
    assert.equal(await rolledBack(read), 'off off off', 'in a transaction with the settings');
    // several claims at once: on PostgreSQL on the claim connections, on PGlite each in its transaction on the one connection
    const claims = await Promise.all(Array.from({ length: 4 }, () => claimDeliveries(t.db, { destinationType: 'https', agentIds: null, limit: 1, leaseMs: 60_000, node: 'n' })));
    assert.equal(claims.reduce((n, c) => n + c.claimed.length, 0), 4);
    // as many statements at once as the pool holds connections, each reading its connection's setting
    const seen = await Promise.all(Array.from({ length: 12 }, () => t.db.query<{ s: string }>('select current_setting($1) as s', ['synchronous_commit'])));
    assert.deepEqual(new Set(seen.map((r) => r.rows[0].s)), new Set(['on']));
  });
});
