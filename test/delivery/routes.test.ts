import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { addMemberWithKey, buildTestApp, call, seedOrg, type Seeded, type TestApp } from '../helpers/app.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination, type EndpointFixture } from '../helpers/fixtures.ts';
import { startReceiver, type Receiver } from '../helpers/https.ts';
import { startTestWorker, waitForStatus } from './helpers.ts';

describe('replay and forwards routes', () => {
  let t: TestDb;
  let api: TestApp;
  let worker: DeliveryWorker | undefined;
  let main: Receiver;
  let other: Receiver;
  let seeded: Seeded;
  let ep: EndpointFixture;
  let destId: string;
  let requestId: string;

  before(async () => {
    t = await openTestDb();
    api = await buildTestApp(t.db);
    main = await startReceiver({ reply: (_r, i) => (i === 0 ? { status: 500, body: 'first try fails' } : { status: 200, body: '{"ok":true}' }) });
    other = await startReceiver();
  });
  beforeEach(async () => {
    await t.reset();
    api.authenticator.invalidate();
    main.received.length = 0;
    other.received.length = 0;
    seeded = await seedOrg(t.db, { role: 'developer' });
    ep = await insertEndpoint(t.db, seeded.org.id, { forwardUrl: `${main.url}/main` });
    destId = (await insertForwardDestination(t.db, ep, { url: `${other.url}/other` })).id;
    await insertForwardDestination(t.db, ep, { url: `${other.url}/disabled`, enabled: false });
    [{ id: requestId }] = await insertCaptures(t.db, ep, [{ body: '{"event":"x"}' }]);
    worker = await startTestWorker(t.db);
  });
  afterEach(async () => {
    await worker?.stop(0);
  });
  after(async () => {
    await api.close();
    await Promise.all([main.close(), other.close()]);
    await t.close();
  });

  /** Waits for the original fan-out: main fails once (retry scheduled far away), other succeeds. */
  async function originalsDone(): Promise<void> {
    await main.waitFor(1);
    await other.waitFor(1);
    await waitForStatus(t.db, ['succeeded'], 1);
  }

  it('replays to every enabled destination with the same webhook-id', async () => {
    await originalsDone();
    const r = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    assert.equal(r.json.data.queued_count, 2);
    assert.equal(r.json.data.request_id, requestId);
    assert.deepEqual(r.json.data.deliveries.map((d: any) => d.destination_id).sort(), [destId, null].sort());
    await Promise.all([main.waitFor(2), other.waitFor(2)]);
    for (const rx of [main, other]) assert.deepEqual(rx.received.map((x) => x.headers['webhook-id']), [`msg_${requestId}`, `msg_${requestId}`]);
    assert.ok(!other.received.some((x) => x.url === '/disabled'));
  });

  it('replays to one named destination, with an empty JSON body or none meaning all', async () => {
    await originalsDone();
    const one = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key, body: { destination_id: destId } });
    assert.equal(one.status, 202);
    assert.equal(one.json.data.queued_count, 1);
    await other.waitFor(2);
    assert.equal(main.received.length, 1);
    const all = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key, body: {} });
    assert.equal(all.json.data.queued_count, 2);
  });

  it('answers 404 for unknown, malformed and other organizations’ requests, and for a destination of another endpoint', async () => {
    const stranger = await seedOrg(t.db, { role: 'super_admin' });
    for (const url of [`/v1/requests/${requestId}/replay`, `/v1/requests/${requestId}/forwards`]) {
      const method = url.endsWith('replay') ? 'POST' : 'GET';
      assert.equal((await call(api.app, method, url, { key: stranger.key })).status, 404);
    }
    assert.equal((await call(api.app, 'POST', '/v1/requests/not-a-uuid/replay', { key: seeded.key })).status, 404);
    assert.equal((await call(api.app, 'POST', '/v1/requests/0190a0a0-0000-7000-8000-000000000000/replay', { key: seeded.key })).status, 404);
    const elsewhere = await insertEndpoint(t.db, seeded.org.id);
    const foreign = await insertForwardDestination(t.db, elsewhere, { url: other.url });
    const r = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key, body: { destination_id: foreign.id } });
    assert.equal(r.status, 404);
    assert.equal(r.json.error.code, 'not_found');
  });

  it('refuses a disabled destination, an endpoint with nothing to forward to and unknown fields with 400', async () => {
    const { rows } = await t.db.query<{ id: string }>(`select id from forward_destinations where url like '%/disabled'`);
    const disabled = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key, body: { destination_id: rows[0].id } });
    assert.equal(disabled.status, 400);
    assert.equal(disabled.json.error.code, 'bad_request');
    const bare = await insertEndpoint(t.db, seeded.org.id);
    const [c] = await insertCaptures(t.db, bare, [{ body: '{}' }]);
    const none = await call(api.app, 'POST', `/v1/requests/${c.id}/replay`, { key: seeded.key });
    assert.equal(none.status, 400);
    const unknown = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key, body: { destination: destId } });
    assert.equal(unknown.status, 400);
    const badId = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key, body: { destination_id: 'x' } });
    assert.equal(badId.status, 400);
  });

  it('needs requests:replay and the requests.replay permission to replay; requests:read to list forwards', async () => {
    const readOnly = await addMemberWithKey(t.db, seeded.org.id, 'developer', ['requests:read']);
    assert.equal((await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: readOnly.key })).status, 403);
    assert.equal((await call(api.app, 'GET', `/v1/requests/${requestId}/forwards`, { key: readOnly.key })).status, 200);
    const replayer = await addMemberWithKey(t.db, seeded.org.id, 'developer', ['requests:read', 'requests:replay']);
    assert.equal((await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: replayer.key })).status, 202);
    const viewer = await addMemberWithKey(t.db, seeded.org.id, 'viewer');
    assert.equal((await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: viewer.key })).status, 403);
    assert.equal((await call(api.app, 'GET', `/v1/requests/${requestId}/forwards`, { key: viewer.key })).status, 200);
    const endpointsOnly = await addMemberWithKey(t.db, seeded.org.id, 'developer', ['endpoints:read']);
    assert.equal((await call(api.app, 'GET', `/v1/requests/${requestId}/forwards`, { key: endpointsOnly.key })).status, 403);
    assert.equal((await call(api.app, 'GET', `/v1/requests/${requestId}/forwards`)).status, 401);
  });

  it('lists every delivery of the request with its attempts, newest first and paged', async () => {
    await originalsDone();
    const r = await call(api.app, 'GET', `/v1/requests/${requestId}/forwards`, { key: seeded.key });
    assert.equal(r.status, 200);
    const { data, meta } = r.json.data;
    assert.deepEqual(meta, { count: 2, has_more: false, next_cursor: null });
    const toMain = data.find((f: any) => f.destination_id === null);
    const toOther = data.find((f: any) => f.destination_id === destId);
    assert.equal(toMain.destination_name, 'forward_url');
    assert.equal(toMain.url, `${main.url}/main`);
    assert.equal(toMain.status, 'pending');
    assert.equal(toMain.webhook_id, `msg_${requestId}`);
    assert.ok(toMain.next_attempt_at);
    assert.equal(toMain.attempts.length, 1);
    const [a] = toMain.attempts;
    assert.equal(a.status_code, 500);
    assert.equal(a.error_class, 'http_status');
    assert.equal(a.response_body, 'first try fails');
    assert.equal(a.response_body_encoding, 'utf8');
    assert.ok(Array.isArray(a.response_headers));
    assert.equal(typeof a.duration_ms, 'number');
    assert.equal(toOther.status, 'succeeded');
    assert.equal(toOther.attempts[0].status_code, 200);

    const replay = await call(api.app, 'POST', `/v1/requests/${requestId}/replay`, { key: seeded.key, body: { destination_id: destId } });
    const page1 = await call(api.app, 'GET', `/v1/requests/${requestId}/forwards?limit=1`, { key: seeded.key });
    assert.equal(page1.json.data.data[0].replay_batch_id, replay.json.data.replay_batch_id, 'the replay is the newest');
    assert.equal(page1.json.data.meta.has_more, true);
    const page2 = await call(api.app, 'GET', `/v1/requests/${requestId}/forwards?limit=5&before=${page1.json.data.meta.next_cursor}`, { key: seeded.key });
    assert.equal(page2.json.data.data.length, 2);
    assert.equal(page2.json.data.meta.has_more, false);
  });
});
