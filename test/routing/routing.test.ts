import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import type { Db } from '../../src/db/db.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { startIngest, type IngestListener } from '../../src/ingest/server.ts';
import { pruneDedupKeys } from '../../src/routing/dedup.ts';
import { call, seedOrg, testConfig, type Seeded } from '../helpers/app.ts';
import { onPostgres, openTestDb, type TestDb } from '../helpers/db.ts';
import { startReceiver, type Receiver } from '../helpers/https.ts';
import { startTestWorker, waitUntil } from '../delivery/helpers.ts';
import { send, startHarness, type Harness } from '../ingest/harness.ts';

// Issue 26 through the API, a real ingest listener and a real delivery
// worker: filters on destinations (400s that change nothing, `filtered` in
// the forwards list with its reason and no incident, replay with and
// without ignore_filter, filter-test) and deduplication (duplicate_of, the
// ?duplicate filter, no forward, copies in one group commit, expiry and
// pruning; and on PostgreSQL two ingest nodes racing on one key).

let t: TestDb;
let h: Harness;
let worker: DeliveryWorker | undefined;
let receiver: Receiver | undefined;

before(async () => {
  t = await openTestDb();
  h = await startHarness(t.db);
});
beforeEach(() => t.reset());
afterEach(async () => {
  await worker?.stop();
  await receiver?.close();
  worker = undefined;
  receiver = undefined;
});
after(async () => {
  await h.close();
  await t.close();
});

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, key: string, body?: unknown) => call(h.api.app, method, url, { key, body });
const json = { 'content-type': 'application/json' };
const post = (slug: string, body: unknown, headers: Record<string, string> = json, port = h.port) =>
  send(port, 'POST', `/h/${slug}`, { headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

async function endpoint(s: Seeded, extra: Record<string, unknown> = {}) {
  const r = await api('POST', '/v1/endpoints', s.key, { name: 'hook', ...extra });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.data as { id: string; slug: string; deduplication: unknown };
}

async function destination(s: Seeded, endpointId: string, url: string, filter?: unknown) {
  const r = await api('POST', '/v1/destinations', s.key, { name: 'billing', url, endpoint_id: endpointId, ...(filter !== undefined && { filter }) });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.data.forward_destination_id as string;
}

async function forwards(s: Seeded, requestId: string) {
  return (await api('GET', `/v1/requests/${requestId}/forwards`, s.key)).json.data.data as Array<Record<string, any>>;
}

async function settled(requestId: string, n: number) {
  return waitUntil(async () => {
    const { rows } = await t.db.query<{ status: string }>(`select status from deliveries where request_id = $1 and status not in ('pending', 'in_flight')`, [requestId]);
    return rows.length >= n && rows;
  }, `${n} settled deliveries of ${requestId}`);
}

const INVOICES = { body: { type: { $startsWith: 'invoice.' } } };

describe('filters', () => {
  test('set on creation and by PATCH, shown on reads; bad filters answer 400 naming the path and change nothing', async () => {
    const s = await seedOrg(t.db);
    const e = await endpoint(s);
    const id = await destination(s, e.id, 'https://billing.example.com/hooks', INVOICES);
    const list = await api('GET', `/v1/endpoints/${e.id}/destinations`, s.key);
    assert.deepEqual(list.json.data.data[0].filter, INVOICES);
    const before = (await t.db.query('select * from forward_destinations where id = $1', [id])).rows[0];
    const bad: Array<[unknown, RegExp]> = [
      [{ body: { type: { $regex: 'x' } } }, /filter\.body\.type\.\$regex.*unknown operator/],
      [{ body: { amount: { $gte: [1] } } }, /filter\.body\.amount\.\$gte.*number or a string/],
      [{ nope: 1 }, /filter\.nope/],
      [{ body: { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { k: 1 } } } } } } } } } } } }, /more than 10 levels/],
      [{ body: { s: 'x'.repeat(70_000) } }, /at most 65536 bytes/],
      ['invoice', /Field "filter" must be/],
    ];
    for (const [filter, re] of bad) {
      const r = await api('PATCH', `/v1/endpoints/${e.id}/destinations/${id}`, s.key, { filter });
      assert.equal(r.status, 400, JSON.stringify(filter).slice(0, 60));
      assert.equal(r.json.error.code, 'bad_request');
      assert.match(r.json.error.message, re);
    }
    const created = await api('POST', '/v1/destinations', s.key, { name: 'x', url: 'https://x.example.com', endpoint_id: e.id, filter: { body: { $or: [] } } });
    assert.equal(created.status, 400);
    assert.match(created.json.error.message, /filter\.body\.\$or/);
    assert.deepEqual((await t.db.query('select * from forward_destinations where id = $1', [id])).rows[0], before);
    assert.equal((await t.db.query('select count(*)::int as n from forward_destinations')).rows[0].n, 1);
    const cleared = await api('PATCH', `/v1/endpoints/${e.id}/destinations/${id}`, s.key, { filter: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.json.data.filter, null);
    assert.equal((await t.db.query('select filter from forward_destinations where id = $1', [id])).rows[0].filter, null, 'SQL null, not JSON null');
  });

  test('a non-matching capture is filtered with its reason, unsent, with no incident or forward_failed; replay applies the current filter unless ignore_filter', async () => {
    receiver = await startReceiver();
    const s = await seedOrg(t.db);
    const e = await endpoint(s);
    const billing = await destination(s, e.id, `${receiver.url}/billing`, INVOICES);
    await destination(s, e.id, `${receiver.url}/all`);
    const invoice = (await post(e.slug, { type: 'invoice.paid', id: 'evt_1' })).json.request_id;
    const charge = (await post(e.slug, { type: 'charge.succeeded', id: 'evt_2' })).json.request_id;
    worker = await startTestWorker(t.db);
    await settled(invoice, 2);
    await settled(charge, 2);
    const paths = receiver.received.map((r) => r.url).sort();
    assert.deepEqual(paths, ['/all', '/all', '/billing']);
    const f = await forwards(s, charge);
    const filtered = f.find((x) => x.destination_id === billing)!;
    assert.equal(filtered.status, 'filtered');
    assert.equal(filtered.filter_reason, 'body.type: expected $startsWith "invoice." got "charge.succeeded"');
    assert.deepEqual(filtered.attempts, []);
    assert.equal(filtered.attempt_count, 0);
    assert.equal(f.find((x) => x.destination_id !== billing)!.filter_reason, null);
    for (const table of ['incident_failures', 'incidents']) {
      assert.equal((await t.db.query(`select count(*)::int as n from ${table}`)).rows[0].n, 0, table);
    }
    assert.equal((await t.db.query(`select count(*)::int as n from subscription_events where event_type = 'request.forward_failed'`)).rows[0].n, 0);
    // the captures list: a capture with one delivered and one filtered destination is delivered
    const page = (await api('GET', `/v1/endpoints/${e.id}/requests`, s.key)).json.data.data;
    assert.equal(page.find((c: any) => c.id === charge).delivery.status, 'delivered');

    // replay to the filtered destination: filtered again (its current filter) ...
    const again = await api('POST', `/v1/requests/${charge}/replay`, s.key, { destination_id: billing });
    assert.equal(again.status, 202);
    await settled(charge, 3);
    assert.equal((await forwards(s, charge))[0].status, 'filtered');
    // ... unless ignore_filter
    const forced = await api('POST', `/v1/requests/${charge}/replay`, s.key, { destination_id: billing, ignore_filter: true });
    assert.equal(forced.status, 202);
    await receiver.waitFor(4);
    await settled(charge, 4);
    assert.equal((await forwards(s, charge))[0].status, 'succeeded');
    assert.equal(receiver.received.at(-1)!.url, '/billing');
    // a filter changed after queueing applies: the worker reads the current one
    await api('PATCH', `/v1/endpoints/${e.id}/destinations/${billing}`, s.key, { filter: { body: { type: 'charge.succeeded' } } });
    await api('POST', `/v1/requests/${charge}/replay`, s.key, { destination_id: billing });
    await receiver.waitFor(5);
    await settled(charge, 5);
  });

  test('every destination of a capture filtered: the capture shows delivery status filtered', async () => {
    const s = await seedOrg(t.db);
    const e = await endpoint(s);
    await destination(s, e.id, 'https://127.0.0.1:9/never', { headers: { 'X-Event': 'push' } });
    const r = (await post(e.slug, { a: 1 })).json.request_id;
    worker = await startTestWorker(t.db);
    await settled(r, 1);
    const one = (await forwards(s, r))[0];
    assert.equal(one.filter_reason, 'headers.X-Event: expected "push" got nothing');
    const page = await api('GET', `/v1/endpoints/${e.id}/requests?delivery_status=filtered`, s.key);
    assert.deepEqual(page.json.data.data.map((c: any) => [c.id, c.delivery.status]), [[r, 'filtered']]);
  });

  test('filter-test answers matches and reason against the stored capture; 400 for a bad filter, 404 for an unknown request; requests:read suffices', async () => {
    const s = await seedOrg(t.db);
    const e = await endpoint(s);
    const form = await send(h.port, 'POST', `/h/${e.slug}/voice?x=1`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'CallStatus=completed&To=%2B1555',
    });
    const id = form.json.request_id;
    const reader = await seedOrg(t.db, { scopes: ['requests:read'] });
    const test = (filter: unknown, key = s.key, req = id) => api('POST', `/v1/requests/${req}/filter-test`, key, { filter });
    assert.deepEqual((await test({ body: { CallStatus: 'completed' }, path: '/voice', query: { x: '1' } })).json, { data: { matches: true, reason: null } });
    assert.deepEqual((await test({ body: { CallStatus: { $in: ['failed', 'busy'] } } })).json, {
      data: { matches: false, reason: 'body.CallStatus: expected $in ["failed","busy"] got "completed"' },
    });
    assert.equal((await test(null)).json.data.matches, true);
    const bad = await test({ body: { CallStatus: { $like: 'x' } } });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.message, /filter\.body\.CallStatus\.\$like/);
    assert.equal((await test({ path: '/voice' }, s.key, '0193a8c2-0000-7000-8000-000000000000')).status, 404);
    const other = await seedOrg(t.db);
    assert.equal((await test({ path: '/voice' }, other.key)).status, 404, "another organization's capture");
    assert.equal((await api('POST', `/v1/requests/${id}/filter-test`, s.key, {})).status, 400, 'filter is required');
    // a scoped key with requests:read only (another organization: 404, so past authorization)
    assert.equal((await test({ path: '/voice' }, reader.key)).status, 404);
  });
});

describe('deduplication', () => {
  test('settings: validated (400 naming the field, nothing changes), normalized, shown, removable', async () => {
    const s = await seedOrg(t.db);
    const e = await endpoint(s, { deduplication: { window_seconds: 60, key: { header: 'Idempotency-Key' } } });
    assert.deepEqual(e.deduplication, { window_seconds: 60, key: { header: 'idempotency-key' } });
    const bad: Array<[unknown, RegExp]> = [
      [{ window_seconds: 0, key: 'body' }, /deduplication\.window_seconds.*1-3600/],
      [{ window_seconds: 3601, key: 'body' }, /deduplication\.window_seconds/],
      [{ window_seconds: 10, key: 'bytes' }, /deduplication\.key/],
      [{ window_seconds: 10, key: { body_path: '' } }, /deduplication\.key/],
      [{ window_seconds: 10, key: { body_path: 'a..b' } }, /deduplication\.key\.body_path/],
      [{ window_seconds: 10, key: { header: 'a b' } }, /deduplication\.key/],
      [{ window_seconds: 10 }, /deduplication\.key/],
      ['body', /deduplication/],
    ];
    for (const [d, re] of bad) {
      const r = await api('PATCH', `/v1/endpoints/${e.id}`, s.key, { deduplication: d, name: 'renamed' });
      assert.equal(r.status, 400, JSON.stringify(d));
      assert.match(r.json.error.message, re);
    }
    const got = (await api('GET', `/v1/endpoints/${e.id}`, s.key)).json.data;
    assert.equal(got.name, 'hook');
    assert.deepEqual(got.deduplication, e.deduplication);
    const off = await api('PATCH', `/v1/endpoints/${e.id}`, s.key, { deduplication: null });
    assert.equal(off.json.data.deduplication, null);
  });

  test('a duplicate within the window is stored with duplicate_of, answered 200, not forwarded, not announced; ?duplicate filters; other keys and keyless captures pass', async () => {
    receiver = await startReceiver();
    const s = await seedOrg(t.db);
    const e = await endpoint(s, { forward_url: `${receiver.url}/in`, deduplication: { window_seconds: 600, key: { body_path: 'id' } } });
    const sub = await api('POST', '/v1/subscriptions', s.key, { target_url: 'https://hooks.example.com/weir', event_types: ['request.captured'] });
    assert.equal(sub.status, 201, JSON.stringify(sub.json));
    const first = await post(e.slug, { id: 'evt_1', n: 1 });
    const dup = await post(e.slug, { id: 'evt_1', n: 2 });
    const other = await post(e.slug, { id: 'evt_2' });
    const keyless = await post(e.slug, 'not json', { 'content-type': 'text/plain' });
    assert.deepEqual([first.status, dup.status, other.status, keyless.status], [200, 200, 200, 200]);
    const one = (await api('GET', `/v1/requests/${dup.json.request_id}`, s.key)).json.data;
    assert.equal(one.duplicate_of, first.json.request_id);
    const dups = (await api('GET', `/v1/endpoints/${e.id}/requests?duplicate=true`, s.key)).json.data.data;
    assert.deepEqual(dups.map((c: any) => c.id), [dup.json.request_id]);
    const originals = (await api('GET', `/v1/endpoints/${e.id}/requests?duplicate=false`, s.key)).json.data.data;
    assert.deepEqual(originals.map((c: any) => c.id).sort(), [first, other, keyless].map((r) => r.json.request_id).sort());
    assert.equal((await api('GET', `/v1/endpoints/${e.id}/requests?duplicate=maybe`, s.key)).status, 400);
    // request.captured: every capture but the duplicate (capture_announcements is the event's outbox)
    const { rows: announced } = await t.db.query<{ capture_id: string }>('select capture_id from capture_announcements order by capture_id');
    assert.deepEqual(announced.map((a) => a.capture_id), [first, other, keyless].map((r) => r.json.request_id).sort());
    worker = await startTestWorker(t.db);
    await receiver.waitFor(3);
    const { rows } = await t.db.query<{ request_id: string }>('select request_id from deliveries');
    assert.equal(rows.length, 3);
    assert.ok(!rows.some((r) => r.request_id === dup.json.request_id), 'the duplicate has no delivery');
  });

  test('copies in one group commit: exactly one is first; an expired key starts over; pruning removes only closed windows', async () => {
    const s = await seedOrg(t.db);
    const e = await endpoint(s, { forward_url: 'https://127.0.0.1:9/x', deduplication: { window_seconds: 1, key: 'body' } });
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(e.slug, 'same bytes', { 'content-type': 'text/plain' })));
    assert.ok(answers.every((a) => a.status === 200));
    const { rows } = await t.db.query<{ id: string; duplicate_of: string | null }>('select id, duplicate_of from captured_requests order by id');
    const firsts = rows.filter((r) => r.duplicate_of === null);
    assert.equal(firsts.length, 1);
    assert.ok(rows.every((r) => r.duplicate_of === null || r.duplicate_of === firsts[0].id));
    assert.equal((await t.db.query('select count(*)::int as n from deliveries')).rows[0].n, 1);
    // the window closes: the next copy is a first again
    await t.db.query(`update capture_dedup_keys set expires_at = now() - interval '2 minutes'`);
    const later = await post(e.slug, 'same bytes', { 'content-type': 'text/plain' });
    const row = (await t.db.query<{ duplicate_of: string | null }>('select duplicate_of from captured_requests where id = $1', [later.json.request_id])).rows[0];
    assert.equal(row.duplicate_of, null);
    assert.equal((await t.db.query('select count(*)::int as n from deliveries')).rows[0].n, 2);
    // pruning: the open key stays, a closed one goes
    await post(e.slug, 'other bytes', { 'content-type': 'text/plain' });
    await t.db.query(`update capture_dedup_keys set expires_at = now() - interval '2 minutes' where capture_id <> $1`, [later.json.request_id]);
    assert.equal(await pruneDedupKeys(t.db), 1);
    assert.deepEqual((await t.db.query('select capture_id from capture_dedup_keys')).rows, [{ capture_id: later.json.request_id }]);
  });

  test('header key; an endpoint without deduplication never marks duplicates', async () => {
    const s = await seedOrg(t.db);
    const e = await endpoint(s, { deduplication: { window_seconds: 60, key: { header: 'X-GitHub-Delivery' } } });
    const plain = await endpoint(s);
    const h1 = { ...json, 'X-GitHub-Delivery': 'd-1' };
    const a = await post(e.slug, { a: 1 }, h1);
    const b = await post(e.slug, { a: 2 }, { ...json, 'x-github-delivery': 'd-1' });
    await post(plain.slug, { a: 1 }, h1);
    await post(plain.slug, { a: 1 }, h1);
    const { rows } = await t.db.query<{ endpoint_id: string; duplicate_of: string | null }>('select endpoint_id, duplicate_of from captured_requests');
    assert.deepEqual(rows.filter((r) => r.duplicate_of !== null).map((r) => r.duplicate_of), [a.json.request_id]);
    assert.ok(b.status === 200);
  });
});

describe('deduplication across two ingest nodes on one PostgreSQL', { skip: onPostgres ? false : 'needs PostgreSQL: two nodes with their own connections' }, () => {
  let second: { db: Db; ingest: IngestListener } | undefined;
  before(async () => {
    const db = await openPostgres(t.url!);
    const ingest = await startIngest({ db, config: testConfig(), logger: pino({ level: 'silent' }) }, 0);
    second = { db, ingest };
  });
  after(async () => {
    await second?.ingest.close();
    await second?.db.close();
  });

  test('copies sent at the same instant to both nodes: exactly one forward per key', async () => {
    const s = await seedOrg(t.db);
    const e = await endpoint(s, { forward_url: 'https://127.0.0.1:9/x', deduplication: { window_seconds: 300, key: { header: 'Idempotency-Key' } } });
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`);
    const answers = await Promise.all(
      keys.flatMap((k) => [h.port, second!.ingest.port].map((port) => post(e.slug, { k }, { ...json, 'Idempotency-Key': k }, port))),
    );
    assert.ok(answers.every((a) => a.status === 200), JSON.stringify(answers.map((a) => a.status)));
    const { rows } = await t.db.query<{ k: string; firsts: number; total: number; deliveries: number }>(
      `select c.body::text as k, count(*) filter (where c.duplicate_of is null)::int as firsts, count(*)::int as total,
              (select count(*)::int from deliveries d where d.request_id = any(array_agg(c.id))) as deliveries
         from captured_requests c group by c.body::text`,
    );
    assert.equal(rows.length, keys.length);
    for (const r of rows) assert.deepEqual([r.firsts, r.total, r.deliveries], [1, 2, 1], r.k);
  });
});
