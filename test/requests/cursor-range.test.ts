import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idTimestamp, isoTime } from '../../src/requests/capture-ids.ts';
import { ADMIN_TOKEN, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertCaptures } from '../helpers/fixtures.ts';
import { assertErrorEnvelope } from '../http/envelope.ts';

// Issue 23, defect 3: a cursor or id whose embedded UUIDv7 time PostgreSQL
// cannot read (ffffffff-ffff-... is the year 10889) answered 500. Every time
// taken from an id is clamped to years 1-9999, the same way on every list.

const t = useTestApp({}, { reset: false });

const FAR_FUTURE = 'ffffffff-ffff-7fff-bfff-ffffffffffff';
const MAX_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
const FAR_PAST = '00000000-0000-7000-8000-000000000000';

describe('idTimestamp', () => {
  it('clamps to text PostgreSQL reads, and keeps ordinary times exact', () => {
    assert.equal(idTimestamp(MAX_UUID), '9999-12-31T23:59:59.999Z');
    assert.equal(idTimestamp(FAR_PAST), '1970-01-01T00:00:00.000Z');
    assert.equal(isoTime(-1e15), '0001-01-01T00:00:00.000Z');
    assert.equal(isoTime(Date.UTC(2026, 0, 2)), '2026-01-02T00:00:00.000Z');
  });
});

describe('far-future and far-past UUIDs on every list and every id route', () => {
  it('the capture list answers every capture before a far-future cursor and none before a far-past one', async () => {
    const { org, key } = await seedOrg(t.db);
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key, body: { name: 'ep' } })).json.data;
    await insertCaptures(t.db, { id: ep.id, organization_id: org.id }, [{ body: 'a' }, { body: 'b' }]);
    for (const cursor of [FAR_FUTURE, MAX_UUID]) {
      const res = await call(t.app, 'GET', `/v1/endpoints/${ep.id}/requests?before=${cursor}`, { key });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      assert.equal(res.json.data.data.length, 2);
    }
    const past = await call(t.app, 'GET', `/v1/endpoints/${ep.id}/requests?before=${FAR_PAST}`, { key });
    assert.equal(past.status, 200);
    assert.equal(past.json.data.data.length, 0);
    const times = await call(t.app, 'GET', `/v1/endpoints/${ep.id}/requests?since=0000-01-01T00:00:00Z&until=9999-12-31T23:59:59Z`, { key });
    assert.equal(times.status, 200, JSON.stringify(times.json));
    assert.equal(times.json.data.data.length, 2);
  });

  it('every documented list with a before cursor, and every GET by id, answers without a 5xx', async () => {
    const { key } = await seedOrg(t.db);
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key, body: { name: 'ep2' } })).json.data;
    let lists = 0;
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      const get = ops.get;
      if (!get || path.endsWith('/stream')) continue;
      const headers = path.startsWith('/admin/') ? { authorization: `Bearer ${ADMIN_TOKEN}` } : undefined;
      const hasBefore = (get.parameters ?? []).some((p: any) => p.in === 'query' && p.name === 'before');
      for (const id of [FAR_FUTURE, MAX_UUID, FAR_PAST]) {
        // the endpoint's own lists take a real endpoint; every other {param} the id under test
        const url = path.replace('/endpoints/{id}/', `/endpoints/${ep.id}/`).replace(/\{\w+\}/g, id);
        const res = await call(t.app, 'GET', hasBefore ? `${url}?before=${id}` : url, { key: headers ? undefined : key, headers });
        assert.ok(res.status < 500, `GET ${url} answered ${res.status} ${JSON.stringify(res.json)}`);
        if (res.status !== 200) assertErrorEnvelope(res, res.status, res.json.error.code);
      }
      if (hasBefore) lists++;
    }
    assert.ok(lists >= 8, `${lists} paged lists checked`);
  });

  it('GET /v1/requests/:id with a far-future id is a 404 like any unknown id', async () => {
    const { key } = await seedOrg(t.db);
    const res = await call(t.app, 'GET', `/v1/requests/${MAX_UUID}`, { key });
    assertErrorEnvelope(res, 404, 'not_found');
  });
});
