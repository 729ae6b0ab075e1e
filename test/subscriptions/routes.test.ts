import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';
import { seedIncident } from '../incidents/helpers.ts';
import { subscribe } from './helpers.ts';

const TARGET = 'https://hooks.example.com/weir';

describe('subscriptions API', () => {
  const t = useTestApp();

  const stored = async () => (await t.db.query(`select * from subscriptions order by id`)).rows;

  describe('happy paths', () => {
    it('creates a subscription showing its secret once, then lists, gets and deletes it', async () => {
      const s = await seedOrg(t.db);
      const endpoint = await insertEndpoint(t.db, s.org.id);
      const created = await call(t.app, 'POST', '/v1/subscriptions', {
        key: s.key,
        body: { target_url: TARGET, event_types: ['request.captured', 'incident.opened'], endpoint_id: endpoint.id },
      });
      assert.equal(created.status, 201);
      const sub = created.json.data;
      assert.match(sub.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
      assert.deepEqual(sub.event_types, ['request.captured', 'incident.opened']);
      assert.equal(sub.endpoint_id, endpoint.id);
      assert.equal(sub.status, 'active');

      const got = await call(t.app, 'GET', `/v1/subscriptions/${sub.id}`, { key: s.key });
      assert.equal(got.status, 200);
      assert.equal('secret' in got.json.data, false, 'the secret is never shown again');
      const { secret: _s, ...shown } = sub;
      assert.deepEqual(got.json.data, shown);

      const list = await call(t.app, 'GET', '/v1/subscriptions', { key: s.key });
      assert.deepEqual(list.json.data.meta, { count: 1, has_more: false, next_cursor: null });
      assert.equal(list.json.data.data[0].id, sub.id);
      assert.equal('secret' in list.json.data.data[0], false);

      assert.equal((await call(t.app, 'DELETE', `/v1/subscriptions/${sub.id}`, { key: s.key })).status, 204);
      assert.equal((await call(t.app, 'GET', `/v1/subscriptions/${sub.id}`, { key: s.key })).status, 404);
      assert.deepEqual(await stored(), []);
    });

    it('pages the list newest first with a cursor', async () => {
      const s = await seedOrg(t.db);
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await subscribe(t.app, s.key, { target_url: TARGET, event_types: ['incident.opened'] })).id);
      const first = await call(t.app, 'GET', '/v1/subscriptions?limit=2', { key: s.key });
      assert.deepEqual(first.json.data.data.map((x: any) => x.id), [ids[2], ids[1]]);
      assert.deepEqual(first.json.data.meta, { count: 2, has_more: true, next_cursor: ids[1] });
      const next = await call(t.app, 'GET', `/v1/subscriptions?limit=2&before=${ids[1]}`, { key: s.key });
      assert.deepEqual(next.json.data.data.map((x: any) => x.id), [ids[0]]);
    });

    it('answers the sample of request.captured: the endpoint\'s latest capture, or the documented example', async () => {
      const s = await seedOrg(t.db);
      const endpoint = await insertEndpoint(t.db, s.org.id);
      const empty = await call(t.app, 'GET', `/v1/subscriptions/sample/${endpoint.id}`, { key: s.key });
      assert.equal(empty.status, 200);
      assert.equal(empty.json.data.type, 'request.captured');
      assert.equal(empty.json.data.sample, true);
      assert.equal(empty.json.data.data.object.endpoint_id, endpoint.id);
      const [, latest] = await insertCaptures(t.db, endpoint, [{ body: 'old' }, { body: 'new' }]);
      const real = await call(t.app, 'GET', `/v1/subscriptions/sample/${endpoint.id}`, { key: s.key });
      assert.equal(real.json.data.sample, false);
      const api = await call(t.app, 'GET', `/v1/requests/${latest.id}`, { key: s.key });
      // as in request.captured itself: the API's delivery summary is where forwarding stands now, not part of what was captured
      const { delivery: _now, ...captured } = api.json.data;
      assert.deepEqual(real.json.data.data.object, captured);
    });

    it('answers the incident sample and the recent incidents', async () => {
      const s = await seedOrg(t.db);
      const none = await call(t.app, 'GET', '/v1/incidents/sample', { key: s.key });
      assert.equal(none.status, 200);
      assert.equal(none.json.data.sample, true);
      assert.equal(none.json.data.type, 'incident.opened');
      assert.deepEqual((await call(t.app, 'GET', '/v1/incidents/recent', { key: s.key })).json.data, []);
      const a = await seedIncident(t.db, s.org.id);
      const b = await seedIncident(t.db, s.org.id);
      await call(t.app, 'PATCH', `/v1/incidents/${a.incidentId}`, { key: s.key, body: { status: 'resolved' } });
      const sample = await call(t.app, 'GET', '/v1/incidents/sample', { key: s.key });
      assert.equal(sample.json.data.sample, false);
      assert.equal(sample.json.data.data.object.id, b.incidentId);
      const recent = await call(t.app, 'GET', '/v1/incidents/recent?limit=1', { key: s.key });
      assert.deepEqual(recent.json.data.map((i: any) => i.id), [b.incidentId]);
      const all = await call(t.app, 'GET', '/v1/incidents/recent', { key: s.key });
      assert.deepEqual(all.json.data.map((i: any) => i.id), [b.incidentId, a.incidentId]);
    });
  });

  describe('bad input: the error envelope, nothing stored', () => {
    const cases: Array<[string, unknown, number, string, RegExp]> = [
      ['an unknown event type', { target_url: TARGET, event_types: ['request.captured', 'payment.done'] }, 400, 'bad_request', /payment\.done/],
      ['no event type', { target_url: TARGET, event_types: [] }, 400, 'bad_request', /event_types/],
      ['an event type twice', { target_url: TARGET, event_types: ['incident.opened', 'incident.opened'] }, 400, 'bad_request', /twice/],
      ['a non-https URL', { target_url: 'http://hooks.example.com/x', event_types: ['incident.opened'] }, 400, 'bad_request', /https/],
      ['a URL with credentials', { target_url: 'https://u:p@hooks.example.com/x', event_types: ['incident.opened'] }, 400, 'bad_request', /credentials/],
      ['a URL with spaces', { target_url: 'https://hooks.example.com/a b', event_types: ['incident.opened'] }, 400, 'bad_request', /spaces/],
      ['no target_url', { event_types: ['incident.opened'] }, 400, 'bad_request', /target_url/],
      ['no event_types', { target_url: TARGET }, 400, 'bad_request', /event_types/],
      ['an unknown field', { target_url: TARGET, event_types: ['incident.opened'], secret: 'whsec_x' }, 400, 'bad_request', /secret/],
      ['event_types not a list', { target_url: TARGET, event_types: 'incident.opened' }, 400, 'bad_request', /event_types/],
      ['an endpoint id that is no id', { target_url: TARGET, event_types: ['request.captured'], endpoint_id: 'nope' }, 404, 'not_found', /Endpoint/],
    ];
    for (const [what, body, status, code, message] of cases) {
      it(`refuses ${what}`, async () => {
        const s = await seedOrg(t.db);
        const r = await call(t.app, 'POST', '/v1/subscriptions', { key: s.key, body });
        assert.equal(r.status, status, JSON.stringify(r.json));
        assert.equal(r.json.error.code, code);
        assert.match(r.json.error.message, message);
        assert.deepEqual(await stored(), []);
      });
    }

    it("refuses another organization's endpoint with 404, and a malformed body", async () => {
      const s = await seedOrg(t.db);
      const other = await seedOrg(t.db);
      const theirs = await insertEndpoint(t.db, other.org.id);
      const r = await call(t.app, 'POST', '/v1/subscriptions', { key: s.key, body: { target_url: TARGET, event_types: ['request.captured'], endpoint_id: theirs.id } });
      assert.equal(r.status, 404);
      assert.equal(r.json.error.code, 'not_found');
      const bad = await call(t.app, 'POST', '/v1/subscriptions', { key: s.key, body: '{"target_url":' });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error.code, 'bad_request');
      assert.deepEqual(await stored(), []);
    });
  });

  describe('security', () => {
    it("answers 404 for another organization's subscription and endpoint sample, and changes nothing", async () => {
      const s = await seedOrg(t.db);
      const other = await seedOrg(t.db);
      const theirs = await subscribe(t.app, other.key, { target_url: TARGET, event_types: ['incident.opened'] });
      const theirEndpoint = await insertEndpoint(t.db, other.org.id);
      const before = await stored();
      for (const [method, url] of [
        ['GET', `/v1/subscriptions/${theirs.id}`],
        ['GET', `/v1/subscriptions/${theirs.id}/events`],
        ['DELETE', `/v1/subscriptions/${theirs.id}`],
        ['POST', `/v1/subscriptions/${theirs.id}/rotate-secret`],
        ['GET', `/v1/subscriptions/sample/${theirEndpoint.id}`],
        ['GET', '/v1/subscriptions/not-an-id'],
      ] as const) {
        const r = await call(t.app, method, url, { key: s.key });
        assert.equal(r.status, 404, `${method} ${url}`);
        assert.equal(r.json.error.code, 'not_found');
      }
      assert.deepEqual(await stored(), before);
      assert.equal((await call(t.app, 'GET', '/v1/subscriptions', { key: s.key })).json.data.meta.count, 0);
    });

    it('needs subscriptions:read to list and subscriptions:write to create, delete and rotate', async () => {
      const s = await seedOrg(t.db);
      const sub = await subscribe(t.app, s.key, { target_url: TARGET, event_types: ['incident.opened'] });
      const reader = await addMemberWithKey(t.db, s.org.id, 'developer', ['subscriptions:read']);
      const writer = await addMemberWithKey(t.db, s.org.id, 'developer', ['subscriptions:write']);
      const other = await addMemberWithKey(t.db, s.org.id, 'developer', ['endpoints:read']);
      assert.equal((await call(t.app, 'GET', '/v1/subscriptions', { key: reader.key })).status, 200);
      assert.equal((await call(t.app, 'GET', `/v1/subscriptions/${sub.id}`, { key: reader.key })).status, 200);
      for (const [method, url, body] of [
        ['POST', '/v1/subscriptions', { target_url: TARGET, event_types: ['incident.opened'] }],
        ['DELETE', `/v1/subscriptions/${sub.id}`, undefined],
        ['POST', `/v1/subscriptions/${sub.id}/rotate-secret`, undefined],
      ] as const) {
        const r = await call(t.app, method, url, { key: reader.key, body });
        assert.equal(r.status, 403, `${method} ${url}`);
        assert.equal(r.json.error.code, 'forbidden');
      }
      assert.equal((await call(t.app, 'GET', '/v1/subscriptions', { key: writer.key })).status, 403);
      assert.equal((await call(t.app, 'GET', '/v1/subscriptions', { key: other.key })).status, 403);
      assert.equal((await call(t.app, 'POST', '/v1/subscriptions', { key: writer.key, body: { target_url: TARGET, event_types: ['incident.opened'] } })).status, 201);
      assert.equal((await stored()).length, 2);
    });

    it('lets a viewer list subscriptions (read scope only) but not create or delete them', async () => {
      const s = await seedOrg(t.db);
      const sub = await subscribe(t.app, s.key, { target_url: TARGET, event_types: ['incident.opened'] });
      const viewer = await addMemberWithKey(t.db, s.org.id, 'viewer');
      assert.equal((await call(t.app, 'GET', '/v1/subscriptions', { key: viewer.key })).status, 200);
      const create = await call(t.app, 'POST', '/v1/subscriptions', { key: viewer.key, body: { target_url: TARGET, event_types: ['incident.opened'] } });
      assert.equal(create.status, 403);
      assert.match(create.json.error.message, /subscriptions\.manage/);
      assert.equal((await call(t.app, 'DELETE', `/v1/subscriptions/${sub.id}`, { key: viewer.key })).status, 403);
      assert.equal((await stored()).length, 1);
    });

    it('needs both subscriptions:read and requests:read for the sample (scope only: a viewer may)', async () => {
      const s = await seedOrg(t.db);
      const endpoint = await insertEndpoint(t.db, s.org.id);
      const url = `/v1/subscriptions/sample/${endpoint.id}`;
      const subsOnly = await addMemberWithKey(t.db, s.org.id, 'viewer', ['subscriptions:read']);
      const reqOnly = await addMemberWithKey(t.db, s.org.id, 'viewer', ['requests:read']);
      const both = await addMemberWithKey(t.db, s.org.id, 'viewer', ['subscriptions:read', 'requests:read']);
      const denied = await call(t.app, 'GET', url, { key: subsOnly.key });
      assert.equal(denied.status, 403);
      assert.match(denied.json.error.message, /requests:read/);
      assert.equal((await call(t.app, 'GET', url, { key: reqOnly.key })).status, 403);
      assert.equal((await call(t.app, 'GET', url, { key: both.key })).status, 200);
      assert.equal((await call(t.app, 'GET', url)).status, 401);
    });

    it('needs incidents:read for the incident sample and recent list', async () => {
      const s = await seedOrg(t.db);
      const k = await addMemberWithKey(t.db, s.org.id, 'viewer', ['subscriptions:read']);
      for (const url of ['/v1/incidents/sample', '/v1/incidents/recent']) assert.equal((await call(t.app, 'GET', url, { key: k.key })).status, 403);
      const r = await addMemberWithKey(t.db, s.org.id, 'viewer', ['incidents:read']);
      for (const url of ['/v1/incidents/sample', '/v1/incidents/recent']) assert.equal((await call(t.app, 'GET', url, { key: r.key })).status, 200);
      assert.equal((await call(t.app, 'GET', '/v1/incidents/recent?limit=0', { key: r.key })).json?.error?.code, 'bad_request');
    });
  });
});
