import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newId } from '../../src/db/ids.ts';
import { addMemberWithKey, call, seedOrg, type Seeded, useTestApp } from '../helpers/app.ts';
import { storeCaptures } from './fixtures.ts';

const t = useTestApp();

const HOUR = 3_600_000;

async function orgEndpoint(s?: Seeded) {
  const seeded = s ?? (await seedOrg(t.db));
  const e = (await call(t.app, 'POST', '/v1/endpoints', { key: seeded.key, body: { name: 'e' } })).json.data;
  return { ...seeded, endpoint: e as { id: string; organization_id: string } };
}

const store = storeCaptures;

const list = (key: string, endpointId: string, qs = '') => call(t.app, 'GET', `/v1/endpoints/${endpointId}/requests${qs}`, { key });

describe('GET /v1/endpoints/:id/requests', () => {
  test('pages newest first with limit (default 25) and the before cursor', async () => {
    const o = await orgEndpoint();
    const caps = await store(t.db, o.endpoint, Array.from({ length: 60 }, (_, i) => ({ at: Date.now() - (60 - i) * 1000 })));
    const newestFirst = caps.map((c) => c.id).reverse();

    const first = await list(o.key, o.endpoint.id);
    assert.equal(first.status, 200);
    assert.deepEqual(first.json.data.data.map((r: any) => r.id), newestFirst.slice(0, 25));
    assert.deepEqual(first.json.data.meta, { count: 25, has_more: true, next_cursor: newestFirst[24] });

    const walked: string[] = [];
    let before: string | null = null;
    do {
      const page: any = await list(o.key, o.endpoint.id, `?limit=7${before ? `&before=${before}` : ''}`);
      walked.push(...page.json.data.data.map((r: any) => r.id));
      before = page.json.data.meta.next_cursor;
      assert.equal(page.json.data.meta.has_more, before !== null);
    } while (before);
    assert.deepEqual(walked, newestFirst);

    const all = await list(o.key, o.endpoint.id, '?limit=100');
    assert.deepEqual(all.json.data.meta, { count: 60, has_more: false, next_cursor: null });
  });

  test('list items carry the metadata and headers, not the body', async () => {
    const o = await orgEndpoint();
    await store(t.db, o.endpoint, [{ method: 'PUT', path: '/x', query: 'a=1', headers: [['A', '1'], ['a', '2']] }]);
    const [item] = (await list(o.key, o.endpoint.id)).json.data.data;
    assert.deepEqual(Object.keys(item).sort(), ['body_size', 'content_type', 'delivery', 'duplicate_of', 'endpoint_id', 'headers', 'id', 'method', 'path', 'query', 'received_at', 'rejected', 'source_ip', 'verification']);
    assert.deepEqual(item.headers, [{ name: 'A', value: '1' }, { name: 'a', value: '2' }]);
    assert.deepEqual([item.method, item.path, item.query, item.body_size], ['PUT', '/x', 'a=1', 2]);
  });

  test('filters by method, time range and text in headers, path, query and body', async () => {
    const o = await orgEndpoint();
    const now = Date.now();
    const [old, get, signed, needle, q] = await store(t.db, o.endpoint, [
      { at: now - 5 * HOUR, method: 'POST' },
      { at: now - 4 * HOUR, method: 'GET' },
      { at: now - 3 * HOUR, headers: [['Stripe-Signature', 't=1,v1=CafeBabe']] },
      { at: now - 2 * HOUR, body: Buffer.from([0xff, 0x00, ...Buffer.from('needle_100%'), 0xfe]) },
      { at: now - HOUR, path: '/orders', query: 'status=Paid' },
    ]);
    const ids = async (qs: string) => {
      const r = await list(o.key, o.endpoint.id, qs);
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json.data.data.map((x: any) => x.id);
    };
    assert.deepEqual(await ids('?method=get'), [get.id]);
    assert.deepEqual(await ids('?method=GET,PUT'), [get.id]);
    assert.equal((await ids('?method=POST')).length, 4);
    const iso = (ms: number) => new Date(ms).toISOString();
    assert.deepEqual(await ids(`?since=${iso(now - 4.5 * HOUR)}&until=${iso(now - 2.5 * HOUR)}`), [signed.id, get.id]);
    assert.deepEqual(await ids(`?until=${iso(now - 4.5 * HOUR)}`), [old.id]);
    assert.deepEqual(await ids('?q=stripe-signature'), [signed.id], 'header names, case-insensitive');
    assert.deepEqual(await ids('?q=cafebabe'), [signed.id], 'header values, case-insensitive');
    assert.deepEqual(await ids('?q=needle_100%25'), [needle.id], 'body bytes, even in a binary body; % and _ are literal');
    assert.deepEqual(await ids('?q=needle_1000'), []);
    assert.deepEqual(await ids('?q=status%3Dpaid'), [q.id], 'path and query');
    assert.deepEqual(await ids(`?q=orders&method=POST&since=${iso(now - 90 * 60_000)}`), [q.id], 'filters combine');
    assert.deepEqual(await ids('?q=stripe_signature'), [], 'an underscore is not a LIKE wildcard');
    assert.deepEqual(await ids('?q=%25'), [needle.id], 'nor is a percent sign');
  });

  test('bad query parameters answer 400', async () => {
    const o = await orgEndpoint();
    for (const qs of ['?limit=0', '?limit=101', '?limit=abc', '?before=nope', '?since=yesterday', '?until=2024-01-01', '?method=P O', '?q=', '?sort=asc']) {
      const r = await list(o.key, o.endpoint.id, qs);
      assert.equal(r.status, 400, qs);
      assert.equal(r.json.error.code, 'bad_request');
    }
  });

  test("another organization's endpoint, or an unknown one, answers 404", async () => {
    const a = await orgEndpoint();
    const b = await seedOrg(t.db);
    await store(t.db, a.endpoint, [{}]);
    assert.equal((await list(b.key, a.endpoint.id)).status, 404);
    assert.equal((await list(a.key, '01890000-0000-7000-8000-000000000000')).status, 404);
    assert.equal((await list(a.key, 'not-a-uuid')).status, 404);
  });
});

describe('GET /v1/requests/:id and /body', () => {
  test('the full record: ordered header pairs, UTF-8 body as text', async () => {
    const o = await orgEndpoint();
    const [c] = await store(t.db, o.endpoint, [{ body: Buffer.from('{"a":"é"}'), headers: [['X', '1'], ['x', '2'], ['Y', '']] }]);
    const r = await call(t.app, 'GET', `/v1/requests/${c.id}`, { key: o.key });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.data, {
      id: c.id,
      endpoint_id: o.endpoint.id,
      received_at: c.received_at.toISOString(),
      method: 'POST',
      path: '',
      query: '',
      headers: [{ name: 'X', value: '1' }, { name: 'x', value: '2' }, { name: 'Y', value: '' }],
      content_type: 'application/json',
      body_size: 10,
      source_ip: '192.0.2.1',
      // an endpoint without signature verification (test/verification covers the rest)
      verification: null,
      rejected: false,
      duplicate_of: null,
      body: '{"a":"é"}',
      body_encoding: 'utf8',
      delivery: { status: 'no_destinations', destinations: 0, delivered: 0, retrying: 0, pending: 0, failed: 0 },
    });
  });

  test('a body that is not UTF-8 comes as base64; /body returns the exact bytes and content-type', async () => {
    const o = await orgEndpoint();
    const bytes = Buffer.from([0xc3, 0x28, 0x00, 0xff]);
    const [c, bare] = await store(t.db, o.endpoint, [{ body: bytes, content_type: 'image/x-weird' }, { body: Buffer.from('plain'), content_type: null }]);
    const r = await call(t.app, 'GET', `/v1/requests/${c.id}`, { key: o.key });
    assert.deepEqual([r.json.data.body, r.json.data.body_encoding], [bytes.toString('base64'), 'base64']);
    const raw = await t.app.inject({ method: 'GET', url: `/v1/requests/${c.id}/body`, headers: { authorization: `Bearer ${o.key}` } });
    assert.equal(raw.statusCode, 200);
    assert.deepEqual(raw.rawPayload, bytes);
    assert.equal(raw.headers['content-type'], 'image/x-weird');
    assert.equal(raw.headers['x-content-type-options'], 'nosniff');
    const plain = await t.app.inject({ method: 'GET', url: `/v1/requests/${bare.id}/body`, headers: { authorization: `Bearer ${o.key}` } });
    assert.equal(plain.headers['content-type'], 'application/octet-stream');
    assert.equal(plain.body, 'plain');
  });

  test("another organization's request id answers 404 on both routes, as does an unknown one", async () => {
    const a = await orgEndpoint();
    const b = await seedOrg(t.db);
    const [c] = await store(t.db, a.endpoint, [{}]);
    for (const url of [`/v1/requests/${c.id}`, `/v1/requests/${c.id}/body`, `/v1/requests/${newId()}`, '/v1/requests/xyz', `/v1/requests/${newId()}/body`]) {
      const r = await call(t.app, 'GET', url, { key: url.includes(c.id) ? b.key : a.key });
      assert.equal(r.status, 404, url);
      assert.equal(r.json.error.code, 'not_found');
    }
  });
});

test('every route needs the requests:read scope; any role may read', async () => {
  const owner = await orgEndpoint();
  const [c] = await store(t.db, owner.endpoint, [{}]);
  const urls = [`/v1/endpoints/${owner.endpoint.id}/requests`, `/v1/requests/${c.id}`, `/v1/requests/${c.id}/body`];
  const reader = await addMemberWithKey(t.db, owner.org.id, 'viewer', ['requests:read']);
  const endpointsOnly = await addMemberWithKey(t.db, owner.org.id, 'admin', ['endpoints:read', 'endpoints:write']);
  const viewerFull = await addMemberWithKey(t.db, owner.org.id, 'viewer');
  for (const url of urls) {
    assert.equal((await call(t.app, 'GET', url, { key: reader.key })).status, 200, url);
    assert.equal((await call(t.app, 'GET', url, { key: viewerFull.key })).status, 200, url);
    const denied = await call(t.app, 'GET', url, { key: endpointsOnly.key });
    assert.equal(denied.status, 403, url);
    assert.equal(denied.json.error.code, 'forbidden');
  }
});
