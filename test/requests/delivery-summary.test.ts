import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertForwardDestination } from '../helpers/fixtures.ts';
import { storeCaptures } from './fixtures.ts';

const t = useTestApp();

/**
 * Issue 28 item 5: captures carry a delivery summary in the list and one
 * capture, and the list filters on it. Deliveries are queued by the real
 * capture statement; their outcomes are written as the worker records them
 * (status, attempt_count), as test/incidents/helpers.ts seeds incidents.
 */
describe('capture delivery summary', () => {
  async function setup() {
    const s = await seedOrg(t.db);
    const endpoint = (await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'e', forward_url: 'https://a.example/hook' } })).json.data;
    await insertForwardDestination(t.db, endpoint, { url: 'https://b.example/hook', name: 'b' });
    const bare = (await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'bare' } })).json.data;
    const now = Date.now();
    const caps = await storeCaptures(t.db, endpoint, [0, 1, 2, 3, 4].map((i) => ({ at: now - (10 - i) * 1000 })));
    const [none] = await storeCaptures(t.db, bare, [{ at: now }]);
    const set = (captureIndex: number, url: string, status: string, attempts: number) =>
      t.db.query(`update deliveries set status = $1, attempt_count = $2 where request_id = $3::uuid and url = $4`, [status, attempts, caps[captureIndex].id, url]);
    const [A, B] = ['https://a.example/hook', 'https://b.example/hook'];
    // 0: both delivered; 1: one delivered, one retrying; 2: one failed, one retrying; 3: untouched (pending);
    // 4: a dead original to A, replayed with success (a second delivery of the pair), B delivered
    await set(0, A, 'succeeded', 1); await set(0, B, 'succeeded', 1);
    await set(1, A, 'succeeded', 1); await set(1, B, 'pending', 2);
    await set(2, A, 'dead', 8); await set(2, B, 'in_flight', 1);
    await set(4, A, 'dead', 8); await set(4, B, 'succeeded', 1);
    await t.db.query(
      `insert into deliveries (id, organization_id, request_id, request_received_at, endpoint_id, destination_type, url, status, attempt_count, replay_batch_id)
       select gen_random_uuid(), organization_id, request_id, request_received_at, endpoint_id, 'https', url, 'succeeded', 1, gen_random_uuid()
         from deliveries where request_id = $1::uuid and url = $2`,
      [caps[4].id, A],
    );
    return { s, endpoint, bare, caps, none };
  }

  test('each list item and one capture say where forwarding stands, per destination', async () => {
    const { s, endpoint, bare, caps, none } = await setup();
    const page = (await call(t.app, 'GET', `/v1/endpoints/${endpoint.id}/requests`, { key: s.key })).json.data.data;
    const byId = new Map(page.map((c: any) => [c.id, c.delivery]));
    assert.deepEqual(byId.get(caps[0].id), { status: 'delivered', destinations: 2, delivered: 2, retrying: 0, pending: 0, failed: 0 });
    assert.deepEqual(byId.get(caps[1].id), { status: 'retrying', destinations: 2, delivered: 1, retrying: 1, pending: 0, failed: 0 });
    assert.deepEqual(byId.get(caps[2].id), { status: 'failed', destinations: 2, delivered: 0, retrying: 1, pending: 0, failed: 1 });
    assert.deepEqual(byId.get(caps[3].id), { status: 'pending', destinations: 2, delivered: 0, retrying: 0, pending: 2, failed: 0 });
    assert.deepEqual(byId.get(caps[4].id), { status: 'delivered', destinations: 2, delivered: 2, retrying: 0, pending: 0, failed: 0 }, 'a replay that delivered it counts, once per destination');
    const bareItem = (await call(t.app, 'GET', `/v1/endpoints/${bare.id}/requests`, { key: s.key })).json.data.data[0];
    assert.equal(bareItem.delivery.status, 'no_destinations');
    const one = await call(t.app, 'GET', `/v1/requests/${caps[2].id}`, { key: s.key });
    assert.equal(one.json.data.delivery.status, 'failed');
    assert.equal((await call(t.app, 'GET', `/v1/requests/${none.id}`, { key: s.key })).json.data.delivery.destinations, 0);
  });

  test('?delivery_status= filters the list and pages through the matches', async () => {
    const { s, endpoint, caps } = await setup();
    const ids = async (qs: string) => (await call(t.app, 'GET', `/v1/endpoints/${endpoint.id}/requests${qs}`, { key: s.key })).json.data;
    assert.deepEqual((await ids('?delivery_status=failed')).data.map((c: any) => c.id), [caps[2].id]);
    assert.deepEqual((await ids('?delivery_status=retrying')).data.map((c: any) => c.id), [caps[1].id]);
    const delivered = await ids('?delivery_status=delivered&limit=1');
    assert.deepEqual(delivered.data.map((c: any) => c.id), [caps[4].id]);
    assert.equal(delivered.meta.has_more, true);
    const next = await ids(`?delivery_status=delivered&limit=1&before=${delivered.meta.next_cursor}`);
    assert.deepEqual(next.data.map((c: any) => c.id), [caps[0].id]);
    assert.equal(next.meta.has_more, false);
    assert.deepEqual((await ids('?delivery_status=no_destinations')).data, []);
  });

  test('refuses an unknown delivery_status with 400 bad_request', async () => {
    const { s, endpoint } = await setup();
    for (const v of ['lost', '', 'FAILED', 'failed,retrying']) {
      const r = await call(t.app, 'GET', `/v1/endpoints/${endpoint.id}/requests?delivery_status=${encodeURIComponent(v)}`, { key: s.key });
      assert.equal(r.status, 400, v);
      assert.equal(r.json.error.code, 'bad_request');
      assert.match(r.json.error.message, /delivery_status/);
    }
  });
});
