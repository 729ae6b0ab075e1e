import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SYSTEM_ACTOR_ID } from '../../src/incidents/store.ts';
import { addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { incidents, seedIncident, updates } from './helpers.ts';

const INCIDENT_FIELDS = [
  'id', 'status', 'scope', 'destination_id', 'destination_name', 'asn', 'asn_org', 'likely_cause', 'failure_count', 'endpoint_count',
  'first_failure_at', 'last_failure_at', 'is_recurring', 'previous_incident_id', 'investigating_at', 'resolved_at', 'resolved_by',
];

/** The routes that change an incident, each with a valid body. */
const writes = (id: string) =>
  [
    ['PATCH', `/v1/incidents/${id}`, { status: 'resolved' }],
    ['POST', `/v1/incidents/${id}/replay`, { requests_per_minute: 60 }],
    ['POST', `/v1/incidents/${id}/updates`, { body: 'x' }],
  ] as const;

describe('incidents API', () => {
  const t = useTestApp();

  /** The rows an invalid request must leave as they were. */
  const snapshot = async () => ({
    incidents: (await t.db.query(`select * from incidents order by id`)).rows,
    updates: (await t.db.query(`select * from incident_updates order by id`)).rows,
    batches: (await t.db.query(`select * from replay_batches order by id`)).rows,
  });

  describe('happy paths', () => {
    it('lists open incidents (investigating included) newest first, filters by status and pages with a cursor', async () => {
      const s = await seedOrg(t.db);
      const seeded = [];
      for (let i = 0; i < 4; i++) seeded.push(await seedIncident(t.db, s.org.id, { n: 1 }));
      const [a, b, c, d] = seeded.map((x) => x.incidentId);
      await call(t.app, 'PATCH', `/v1/incidents/${b}`, { key: s.key, body: { status: 'investigating' } });
      await call(t.app, 'PATCH', `/v1/incidents/${c}`, { key: s.key, body: { status: 'resolved' } });

      const open = await call(t.app, 'GET', '/v1/incidents', { key: s.key });
      assert.equal(open.status, 200);
      assert.deepEqual(open.json.data.data.map((i: any) => i.id), [d, b, a]);
      assert.deepEqual(open.json.data.meta, { count: 3, has_more: false, next_cursor: null });
      for (const f of INCIDENT_FIELDS) assert.ok(f in open.json.data.data[0], `field ${f}`);
      assert.equal('failures' in open.json.data.data[0], false);

      const ids = async (q: string) => (await call(t.app, 'GET', `/v1/incidents${q}`, { key: s.key })).json.data.data.map((i: any) => i.id);
      assert.deepEqual(await ids('?status=investigating'), [b]);
      assert.deepEqual(await ids('?status=resolved'), [c]);
      assert.deepEqual(await ids('?status=all'), [d, c, b, a]);
      assert.deepEqual(await ids('?status=open'), [d, b, a]);

      const first = await call(t.app, 'GET', '/v1/incidents?status=all&limit=3', { key: s.key });
      assert.deepEqual(first.json.data.meta, { count: 3, has_more: true, next_cursor: b });
      assert.deepEqual(await ids(`?status=all&limit=3&before=${first.json.data.meta.next_cursor}`), [a]);
    });

    it('gets an incident with its newest 100 failures and its updates, newest first', async () => {
      const s = await seedOrg(t.db);
      const { incidentId, destinationId } = await seedIncident(t.db, s.org.id, { n: 120 });
      await t.db.query(`update incident_failures set failed_at = now() - (random() * interval '1 hour')`);
      const { status, json } = await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key });
      assert.equal(status, 200);
      const inc = json.data;
      assert.equal(inc.failure_count, 120);
      assert.equal(inc.failures.length, 100);
      assert.equal(inc.destination_id, destinationId);
      const times = inc.failures.map((f: any) => Date.parse(f.failed_at));
      assert.deepEqual(times, [...times].sort((x, y) => y - x), 'failures newest first');
      const f = inc.failures[0];
      for (const k of ['request_id', 'endpoint_id', 'destination_id', 'destination_url', 'status_code', 'error', 'failed_at', 'replayed_at', 'replay_status_code']) assert.ok(k in f, k);
      assert.equal(f.status_code, 503);
      assert.equal(f.destination_id, destinationId);
      assert.equal(f.replayed_at, null);
      assert.ok(inc.updates.length >= 2);
      const created = inc.updates.map((u: any) => u.id);
      assert.deepEqual(created, [...created].sort().reverse(), 'updates newest first');
      assert.ok(inc.updates.every((u: any) => u.is_system && u.author_id === SYSTEM_ACTOR_ID));
    });

    it('moves an incident through investigating, resolved and open again, with a system update for each change', async () => {
      const s = await seedOrg(t.db, { role: 'developer' });
      const { incidentId } = await seedIncident(t.db, s.org.id);
      const before = (await updates(t.db, incidentId)).length;

      const inv = await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'investigating' } });
      assert.equal(inv.status, 200);
      assert.equal(inv.json.data.status, 'investigating');
      const investigatingAt = inv.json.data.investigating_at;
      assert.ok(investigatingAt);

      const res = await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'resolved' } });
      assert.equal(res.json.data.status, 'resolved');
      assert.ok(res.json.data.resolved_at);
      assert.equal(res.json.data.resolved_by, s.memberId);
      assert.equal(res.json.data.investigating_at, investigatingAt, 'investigating_at is kept');

      const again = await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'investigating' } });
      assert.equal(again.json.data.investigating_at, investigatingAt, 'the first investigating_at is kept');
      const reopened = await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'open' } });
      assert.equal(reopened.json.data.status, 'open');
      assert.equal(reopened.json.data.resolved_at, null);
      assert.equal(reopened.json.data.resolved_by, null);

      const same = await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'open' } });
      assert.equal(same.status, 200);
      const timeline = (await updates(t.db, incidentId)).slice(before);
      assert.deepEqual(
        timeline.map((u) => u.body.replace(/ by member .*/, '')),
        ['Status changed from open to investigating', 'Status changed from investigating to resolved', 'Status changed from resolved to investigating', 'Status changed from investigating to open'],
      );
      assert.ok(timeline.every((u) => u.is_system));
    });

    it("adds a member's note to the timeline", async () => {
      const s = await seedOrg(t.db, { role: 'admin' });
      const { incidentId } = await seedIncident(t.db, s.org.id);
      const { status, json } = await call(t.app, 'POST', `/v1/incidents/${incidentId}/updates`, { key: s.key, body: { body: 'Paged the billing team.' } });
      assert.equal(status, 201);
      assert.equal(json.data.body, 'Paged the billing team.');
      assert.equal(json.data.is_system, false);
      assert.equal(json.data.author_id, s.memberId);
      const detail = await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key });
      assert.equal(detail.json.data.updates[0].id, json.data.id);
    });
  });

  describe('errors: each answers the envelope and changes nothing', () => {
    it('refuses bad list parameters with 400 bad_request', async () => {
      const s = await seedOrg(t.db);
      for (const q of ['status=closed', 'status=', 'limit=0', 'limit=101', 'limit=abc', 'limit=2.5', 'before=nope', 'colour=red']) {
        const { status, json } = await call(t.app, 'GET', `/v1/incidents?${q}`, { key: s.key });
        assert.equal(status, 400, q);
        assert.equal(json.error.code, 'bad_request', q);
        assert.equal(typeof json.error.message, 'string');
      }
    });

    it("answers 404 not_found for an unknown, malformed or other organization's incident", async () => {
      const s = await seedOrg(t.db);
      const other = await seedOrg(t.db);
      const { incidentId } = await seedIncident(t.db, other.org.id);
      const before = await snapshot();
      for (const id of [incidentId, '0190a000-0000-7000-8000-000000000000', 'not-a-uuid']) {
        for (const [method, path, body] of [['GET', `/v1/incidents/${id}`, undefined] as const, ...writes(id)]) {
          const { status, json } = await call(t.app, method, path, { key: s.key, body });
          assert.equal(status, 404, `${method} ${path}`);
          assert.equal(json.error.code, 'not_found');
        }
      }
      assert.deepEqual(await snapshot(), before);
    });

    it('refuses a missing or invalid status with 400 bad_request', async () => {
      const s = await seedOrg(t.db);
      const { incidentId } = await seedIncident(t.db, s.org.id);
      const before = await snapshot();
      for (const body of [{}, { status: 'closed' }, { status: 'OPEN' }, { status: 1 }, { status: null }, { status: 'resolved', extra: true }, [], 'resolved', undefined]) {
        const { status, json } = await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body });
        assert.equal(status, 400, JSON.stringify(body));
        assert.equal(json.error.code, 'bad_request');
      }
      const bad = await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: '{"status":' });
      assert.equal(bad.status, 400);
      assert.deepEqual(await snapshot(), before);
    });

    it('refuses an empty or missing note with 400 bad_request', async () => {
      const s = await seedOrg(t.db);
      const { incidentId } = await seedIncident(t.db, s.org.id);
      const before = await snapshot();
      for (const body of [{}, { body: '' }, { body: '   ' }, { body: 5 }, { body: 'x'.repeat(10_001) }]) {
        const { status, json } = await call(t.app, 'POST', `/v1/incidents/${incidentId}/updates`, { key: s.key, body });
        assert.equal(status, 400, JSON.stringify(body).slice(0, 40));
        assert.equal(json.error.code, 'bad_request');
      }
      assert.deepEqual(await snapshot(), before);
    });
  });

  describe('security', () => {
    it('needs a valid key', async () => {
      const { status, json } = await call(t.app, 'GET', '/v1/incidents');
      assert.equal(status, 401);
      assert.equal(json.error.code, 'unauthorized');
    });

    it('lets incidents:read list and get, but not change', async () => {
      const s = await seedOrg(t.db, { scopes: ['incidents:read'] });
      const { incidentId } = await seedIncident(t.db, s.org.id);
      assert.equal((await call(t.app, 'GET', '/v1/incidents', { key: s.key })).status, 200);
      assert.equal((await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key })).status, 200);
      const before = await snapshot();
      for (const [method, path, body] of writes(incidentId)) {
        const { status, json } = await call(t.app, method, path, { key: s.key, body });
        assert.equal(status, 403, `${method} ${path}`);
        assert.equal(json.error.code, 'forbidden');
      }
      assert.deepEqual(await snapshot(), before);
    });

    it('refuses list and get to a key without incidents:read', async () => {
      const s = await seedOrg(t.db, { scopes: ['endpoints:read', 'incidents:write'] });
      const { incidentId } = await seedIncident(t.db, s.org.id);
      assert.equal((await call(t.app, 'GET', '/v1/incidents', { key: s.key })).status, 403);
      assert.equal((await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key })).status, 403);
      // incidents:write alone is enough to change one (the spec's table)
      assert.equal((await call(t.app, 'PATCH', `/v1/incidents/${incidentId}`, { key: s.key, body: { status: 'investigating' } })).status, 200);
    });

    it("refuses PATCH, replay and notes to a viewer's key even with full access", async () => {
      const s = await seedOrg(t.db);
      const viewer = await addMemberWithKey(t.db, s.org.id, 'viewer');
      const scopedViewer = await addMemberWithKey(t.db, s.org.id, 'viewer', ['incidents:read', 'incidents:write']);
      const { incidentId } = await seedIncident(t.db, s.org.id);
      const before = await snapshot();
      for (const key of [viewer.key, scopedViewer.key]) {
        assert.equal((await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key })).status, 200, 'a viewer may read');
        for (const [method, path, body] of writes(incidentId)) {
          const { status, json } = await call(t.app, method, path, { key, body });
          assert.equal(status, 403, `${method} ${path}`);
          assert.equal(json.error.code, 'forbidden');
        }
      }
      assert.deepEqual(await snapshot(), before);
      assert.equal((await incidents(t.db))[0].status, 'open');
    });
  });
});
