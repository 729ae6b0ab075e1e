import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import type { Db } from '../../src/db/db.ts';
import { DELIVERY_CHANNEL, forwardTargets } from '../../src/delivery/enqueue.ts';
import { createEndpoint, deleteEndpoint, updateEndpoint } from '../../src/endpoints/endpoints.ts';
import { CAPTURE_STATEMENT, CAPTURE_STATEMENT_DEDUP, storeCaptures } from '../../src/ingest/store.ts';
import { lockOrganization } from '../../src/orgs/organizations.ts';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import type { Capture } from '../../src/requests/captures.ts';
import { seedOrg } from '../helpers/app.ts';
import { onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';
import { captureOf, insertForwardDestination } from '../helpers/fixtures.ts';
import { assertIndexWalkFunction, genericPlanOf, INDEX_WALK_SETTINGS } from '../helpers/plans.ts';

let t: TestDb;
before(async () => {
  t = await openTestDb();
});
beforeEach(() => t.reset());
after(() => t.close());

async function endpoint(db: Db, forwardUrl?: string) {
  const s = await seedOrg(db);
  const r = await createEndpoint(db, DEFAULT_PLANS, s.org.id, { name: 'e', createdBy: s.memberId, forwardUrl });
  assert.ok(r.ok);
  return r.endpoint;
}

function capture(e: { id: string; organization_id: string }, body = 'x'): Capture {
  return captureOf(e, { body, path: '/p', headers: [['Content-Type', 'application/json']] });
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('deliveries are ordered like their captures: capture by capture, forward_url first, then destinations by sort_order', async () => {
  const e = await endpoint(t.db, 'https://receiver.example/forward-url');
  // Inserted out of order (ids ascending opposite to sort_order), so only sort_order can put them right.
  const second = await insertForwardDestination(t.db, e, { url: 'https://receiver.example/second', sortOrder: 1 });
  const disabled = await insertForwardDestination(t.db, e, { url: 'https://receiver.example/disabled', sortOrder: 0, enabled: false });
  const first = await insertForwardDestination(t.db, e, { url: 'https://receiver.example/first', sortOrder: 0 });
  const caps = [capture(e, 'a'), capture(e, 'b'), capture(e, 'c')];
  assert.deepEqual(await storeCaptures(t.db, caps), ['stored', 'stored', 'stored']);

  const { rows } = await t.db.query<{ id: string; request_id: string; forward_destination_id: string | null; url: string | null; endpoint_id: string }>(
    'select id::text, request_id::text, forward_destination_id::text, url, endpoint_id::text from deliveries order by id',
  );
  assert.equal(rows.length, 9);
  const expected = caps.flatMap((c) => [
    { request_id: c.id, forward_destination_id: null, url: 'https://receiver.example/forward-url' },
    { request_id: c.id, forward_destination_id: first.id, url: 'https://receiver.example/first' },
    { request_id: c.id, forward_destination_id: second.id, url: 'https://receiver.example/second' },
  ]);
  assert.deepEqual(
    rows.map((r) => ({ request_id: r.request_id, forward_destination_id: r.forward_destination_id, url: r.url })),
    expected,
  );
  assert.ok(rows.every((r) => r.forward_destination_id !== disabled.id), 'the disabled destination gets nothing');
  assert.ok(rows.every((r) => r.endpoint_id === e.id));
  for (const [i, r] of rows.entries()) {
    assert.match(r.id, UUID_V7, `delivery ${r.id} is a UUIDv7`);
    // the capture's id with the target's position (forward_url, then destinations by sort_order) in the variant byte
    const position = i % 3;
    const expectedId = r.request_id.slice(0, 19) + (0x80 + position).toString(16) + r.request_id.slice(21);
    assert.equal(r.id, expectedId, `delivery ${r.id} is capture ${r.request_id} at position ${position}`);
  }
  assert.equal(new Set(rows.map((r) => r.id)).size, 9);
  // The capture statement writes this rule in SQL of its own; replays take it
  // from forwardTargets(). The two must agree.
  const replayed = await forwardTargets(t.db, [e.id]);
  assert.deepEqual(
    replayed.map((x) => ({ forward_destination_id: x.forwardDestinationId, url: x.url })),
    expected.slice(0, 3).map(({ forward_destination_id, url }) => ({ forward_destination_id, url })),
  );
});

test('a notification wakes the workers when deliveries were queued, and none is sent when nothing was', async () => {
  const bare = await endpoint(t.db);
  const forwarding = await endpoint(t.db, 'https://receiver.example/hook');
  let heard = 0;
  let onHeard: (() => void) | undefined;
  const unlisten = await t.db.listen(DELIVERY_CHANNEL, () => {
    heard++;
    onHeard?.();
  });
  try {
    // Nothing to forward to: captures stored, nothing queued, silence.
    assert.deepEqual(await storeCaptures(t.db, [capture(bare), capture(bare)]), ['stored', 'stored']);
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from deliveries');
    assert.equal(rows[0].n, 0);

    const woken = new Promise<void>((r) => (onHeard = r));
    assert.deepEqual(await storeCaptures(t.db, [capture(forwarding), capture(forwarding)]), ['stored', 'stored']);
    await woken;
    // Notifications arrive in commit order, so a notification of the first
    // call would have been heard before this one: exactly one means it sent none.
    assert.equal(heard, 1, 'one notification, for the call that queued deliveries');
  } finally {
    await unlisten();
  }
});

test('captures of a paused and of a deleted endpoint are refused in the same call, in input order; only the live one is stored with its deliveries', async () => {
  const paused = await endpoint(t.db, 'https://receiver.example/paused');
  const gone = await endpoint(t.db, 'https://receiver.example/gone');
  const live = await endpoint(t.db, 'https://receiver.example/live');
  await insertForwardDestination(t.db, paused);
  await insertForwardDestination(t.db, live);
  await updateEndpoint(t.db, paused.organization_id, paused.id, { paused: true }, null);
  assert.ok((await deleteEndpoint(t.db, gone.organization_id, gone.id, null)).ok);

  const caps = [capture(paused), capture(gone), capture(live)];
  assert.deepEqual(await storeCaptures(t.db, caps), ['endpoint_paused', 'endpoint_gone', 'stored']);

  const stored = await t.db.query<{ id: string }>('select id::text from captured_requests');
  assert.deepEqual(stored.rows.map((r) => r.id), [caps[2].id]);
  const deliveries = await t.db.query<{ request_id: string; endpoint_id: string }>(
    'select request_id::text, endpoint_id::text from deliveries order by id',
  );
  assert.deepEqual(deliveries.rows, [
    { request_id: caps[2].id, endpoint_id: live.id },
    { request_id: caps[2].id, endpoint_id: live.id },
  ]);
});

test('an empty group is no statement and no outcome', async () => {
  assert.deepEqual(await storeCaptures(t.db, []), []);
});

test('a change holding its organization locked (an endpoint being created) does not stall capture groups of that organization', { skip: !onPostgres && 'needs two PostgreSQL connections' }, async () => {
  const e = await endpoint(t.db, 'https://receiver.example/in');
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holding = t.db.transaction(async (tx) => {
    await lockOrganization(tx, e.organization_id);
    locked();
    await held;
  });
  await isLocked;
  try {
    // The group's delivery rows reference the organization (a KEY SHARE
    // lock): with FOR UPDATE on the organization this would wait, and the
    // lock_timeout turns that wait into an error instead of a slow test.
    const outcomes = await t.db.transaction(async (tx) => {
      await tx.exec("set local lock_timeout = '5s'");
      return storeCaptures(tx, [capture(e)]);
    });
    assert.deepEqual(outcomes, ['stored']);
  } finally {
    release();
    await holding;
  }
  assert.equal((await t.db.query<{ n: number }>('select count(*)::int as n from deliveries')).rows[0].n, 1);
});

test('the capture statements, prepared: their generic plan reads endpoints and their destinations by index, before and after the tables are analyzed (QueryOptions.name)', async () => {
  // 3,000 endpoints with a destination each, none analyzed yet: a generic plan without statistics
  // once hashed the live endpoints against a read of the whole forward_destinations table
  const e = await endpoint(t.db, 'https://receiver.example/forward-url');
  await t.db.query(
    `insert into endpoints (id, organization_id, slug, name, forward_url)
     select gen_random_uuid(), $1::uuid, 'plan' || g, 'e' || g, 'https://receiver.example/' || g from generate_series(1, 3000) g`,
    [e.organization_id],
  );
  await t.db.query(
    `insert into forward_destinations (id, organization_id, endpoint_id, name, destination_type, url, sort_order)
     select gen_random_uuid(), organization_id, id, 'd', 'https', 'https://receiver.example/d', 0 from endpoints`,
  );
  for (const analyzed of [false, true]) {
    if (analyzed) await t.db.exec('analyze endpoints; analyze forward_destinations');
    for (const statement of [CAPTURE_STATEMENT, CAPTURE_STATEMENT_DEDUP]) {
      const plan = await genericPlanOf(t.db, statement, 12);
      assert.match(plan, /(Index Scan using|Bitmap Index Scan on) forward_destinations_endpoint\b/, plan);
      assert.match(plan, /(Index Scan using|Bitmap Index Scan on) endpoints_pkey\b/, plan);
      assert.doesNotMatch(plan, /Seq Scan on (forward_destinations|endpoints)\b/, plan);
      // the hand-off's probe for a waiting HTTPS delivery (HANDOFF in store.ts) is the function's, not this plan's
      assert.doesNotMatch(plan, /Seq Scan on deliveries\b/, plan);
    }
  }
  // and the statement still stores and queues as before
  assert.deepEqual(await storeCaptures(t.db, [capture(e, 'a')]), ['stored']);
  // The hand-off's probe (HANDOFF in store.ts; migration 0024) walks deliveries_due with the queue analyzed
  // small or large: a plan is kept per connection, so one made while the table was tiny must not read it
  // whole later. Without the function's settings the tiny table's plan was a sequential scan.
  const probe = `select exists (select from deliveries d where d.status = 'pending' and d.destination_type = 'https' and d.next_attempt_at <= now())`;
  await assertIndexWalkFunction(t.db, 'deliveries_https_waiting', probe.slice('select '.length));
  for (const rows of [1, 2000]) {
    if (rows > 1) await storeCaptures(t.db, Array.from({ length: rows }, (_, i) => capture(e, `q${i}`)));
    await t.db.exec('analyze deliveries');
    // the type as a parameter, as EXECUTE needs one; the plan of the literal is the same walk
    const plan = await genericPlanOf(t.db, probe.replace(`'https'`, '$1::text'), 1, INDEX_WALK_SETTINGS);
    assert.match(plan, /Index (Only )?Scan using deliveries_due\b/, plan);
    const { rows: answer } = await t.db.query<{ waiting: boolean }>('select deliveries_https_waiting() as waiting');
    assert.equal(answer[0].waiting, true, 'the captures just stored wait');
  }
});

test('a group\'s deliveries are inserted in id order, so those due at the same moment wait in deliveries_due in capture order', async () => {
  const e = await endpoint(t.db, 'https://receiver.example/forward-url');
  for (const sortOrder of [2, 0, 1]) await insertForwardDestination(t.db, e, { url: `https://receiver.example/${sortOrder}`, sortOrder });
  assert.deepEqual(await storeCaptures(t.db, Array.from({ length: 20 }, (_, i) => capture(e, `b${i}`))), Array(20).fill('stored'));
  // the heap order of one statement's inserts (btree entries of equal keys follow it)
  const { rows } = await t.db.query<{ id: string }>('select id::text from deliveries order by ctid');
  assert.equal(rows.length, 80);
  assert.deepEqual(rows.map((r) => r.id), rows.map((r) => r.id).sort());
});
