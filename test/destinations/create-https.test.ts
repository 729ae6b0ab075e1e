import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { newId } from '../../src/db/ids.ts';
import { addMemberWithKey, buildTestApp, call, seedOrg, type Seeded, useTestApp } from '../helpers/app.ts';
import { insertEndpoint } from '../helpers/fixtures.ts';
import { destinationState, forwardCount, savedCount } from './helpers.ts';

describe('POST /v1/destinations (https flow)', () => {
  const t = useTestApp();
  let s: Seeded;
  beforeEach(async () => {
    s = await seedOrg(t.db, { plan: 'free', role: 'developer' });
  });

  const post = (body: unknown, key = s.key) => call(t.app, 'POST', '/v1/destinations', { key, body });

  describe('happy', () => {
    it('creates a saved destination with the defaults and no attachment', async () => {
      const r = await post({ name: 'Staging', url: 'https://staging.example.com/hooks' });
      assert.equal(r.status, 201);
      const d = r.json.data;
      assert.match(d.id, /^[0-9a-f-]{36}$/);
      assert.equal(d.name, 'Staging');
      assert.equal(d.url, 'https://staging.example.com/hooks');
      assert.equal(d.visibility, 'org');
      assert.equal(d.is_reusable, true);
      assert.equal(d.created_by, s.memberId);
      assert.ok(!Number.isNaN(Date.parse(d.created_at)));
      assert.equal('forward_destination_id' in d, false);
      assert.equal('attachment_error' in r.json, false);
      assert.equal(await savedCount(t.db, s.org.id), 1);
    });

    it('accepts destination_type "https", a visibility and is_reusable', async () => {
      const r = await post({ name: 'Mine', url: 'https://a.example', destination_type: 'https', visibility: 'private', is_reusable: false });
      assert.equal(r.status, 201);
      assert.equal(r.json.data.visibility, 'private');
      assert.equal(r.json.data.is_reusable, false);
    });

    it('attaches to endpoint_id and answers the forward destination id', async () => {
      const ep = await insertEndpoint(t.db, s.org.id);
      const r = await post({ name: 'Staging', url: 'https://staging.example.com/in', endpoint_id: ep.id });
      assert.equal(r.status, 201);
      assert.match(r.json.data.forward_destination_id, /^[0-9a-f-]{36}$/);
      assert.equal('attachment_error' in r.json, false);
      const list = await call(t.app, 'GET', `/v1/endpoints/${ep.id}/destinations`, { key: s.key });
      assert.equal(list.status, 200);
      assert.equal(list.json.data.data.length, 1);
      const f = list.json.data.data[0];
      assert.equal(f.id, r.json.data.forward_destination_id);
      assert.equal(f.destination_type, 'https');
      assert.equal(f.url, 'https://staging.example.com/in');
      assert.equal(f.name, 'Staging');
      assert.equal(f.enabled, true);
      assert.equal(f.agent_id, null);
      assert.equal(f.target_port, null);
      assert.equal(f.target_path, null);
      assert.equal(f.saved_destination_id, r.json.data.id);
      assert.equal(f.retry_enabled, true);
      assert.deepEqual(f.retry_schedule, [5, 300, 1800, 7200, 18000, 36000, 36000]);
      assert.equal(f.rate_limit_enabled, false);
      assert.equal(f.rate_limit_per_minute, null);
    });

    it('stores retry, rate and method settings given at creation on the attachment', async () => {
      const ep = await insertEndpoint(t.db, s.org.id);
      const r = await post({
        name: 'Paced',
        url: 'https://paced.example',
        endpoint_id: ep.id,
        method_override: 'PUT',
        retry_enabled: false,
        retry_schedule: [10, 60],
        intelligent_retry: false,
        rate_limit_enabled: true,
        rate_limit_per_minute: 120,
      });
      assert.equal(r.status, 201);
      const f = (await call(t.app, 'GET', `/v1/endpoints/${ep.id}/destinations`, { key: s.key })).json.data.data[0];
      assert.equal(f.method_override, 'PUT');
      assert.equal(f.retry_enabled, false);
      assert.deepEqual(f.retry_schedule, [10, 60]);
      assert.equal(f.intelligent_retry, false);
      assert.equal(f.rate_limit_enabled, true);
      assert.equal(f.rate_limit_per_minute, 120);
    });

    it('a custom key with destinations:write creates', async () => {
      const k = await addMemberWithKey(t.db, s.org.id, 'developer', ['destinations:write']);
      assert.equal((await post({ name: 'x', url: 'https://x.example' }, k.key)).status, 201);
    });
  });

  describe('errors', () => {
    it('missing name or url is 400 bad_request and creates nothing', async () => {
      for (const body of [{ url: 'https://x.example' }, { name: 'x' }, { name: 'x', destination_type: 'https' }, {}]) {
        const r = await post(body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, 'bad_request');
        assert.match(r.json.error.message, /"(name|url)"/);
      }
      assert.equal(await savedCount(t.db, s.org.id), 0);
    });

    it('refuses invalid values with 400 bad_request', async () => {
      const ep = await insertEndpoint(t.db, s.org.id);
      const cases: unknown[] = [
        { name: 'x', url: 'http://plain.example' },
        { name: 'x', url: 'ftp://x.example' },
        { name: 'x', url: 'https://' },
        { name: 'x', url: 'https://bad host.example' },
        { name: 'x', url: 'https://x.example/' + 'a'.repeat(2100) },
        { name: '', url: 'https://x.example' },
        { name: '   ', url: 'https://x.example' },
        { name: 'x'.repeat(101), url: 'https://x.example' },
        { name: 5, url: 'https://x.example' },
        { name: 'x', url: 'https://x.example', visibility: 'public' },
        { name: 'x', url: 'https://x.example', is_reusable: 'yes' },
        { name: 'x', url: 'https://x.example', destination_type: 'webhook' },
        { name: 'x', url: 'https://x.example', endpoint_id: 'not-a-uuid' },
        { name: 'x', url: 'https://x.example', unknown_field: 1 },
        { name: 'x', url: 'https://x.example', agent_id: newId() },
        { name: 'x', url: 'https://x.example', target_port: 80 },
        { name: 'x', url: 'https://x.example', target_path: '/x' },
        { name: 'x', url: 'https://x.example', environment_override: 'development' },
        // settings belong to an attachment: without endpoint_id there is none
        { name: 'x', url: 'https://x.example', retry_enabled: false },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, retry_schedule: [] },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, retry_schedule: [0] },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, retry_schedule: [86401] },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, retry_schedule: [1.5] },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, retry_schedule: Array(21).fill(5) },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, rate_limit_enabled: true },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, rate_limit_per_minute: 0 },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, rate_limit_per_minute: 60001 },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, method_override: 'GE T' },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, method_override: 'CONNECT' },
        { name: 'x', url: 'https://x.example', endpoint_id: ep.id, method_override: '' },
      ];
      const before = await destinationState(t.db);
      for (const body of cases) {
        const r = await post(body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, 'bad_request', JSON.stringify(body));
        assert.equal(typeof r.json.error.message, 'string');
      }
      assert.deepEqual(await destinationState(t.db), before);
    });

    it('an unknown endpoint_id still creates the saved destination, with attachment_error not_found at the top level', async () => {
      const r = await post({ name: 'x', url: 'https://x.example', endpoint_id: newId() });
      assert.equal(r.status, 201);
      assert.equal(r.json.attachment_error.code, 'not_found');
      assert.equal(typeof r.json.attachment_error.message, 'string');
      assert.equal('attachment_error' in r.json.data, false);
      assert.equal('forward_destination_id' in r.json.data, false);
      const got = await call(t.app, 'GET', `/v1/destinations/${r.json.data.id}`, { key: s.key });
      assert.equal(got.status, 200);
      assert.deepEqual(got.json.data.endpoints, []);
    });

    it('an endpoint at max_forward_destinations still creates the saved destination, with attachment_error plan_limit', async () => {
      const ep = await insertEndpoint(t.db, s.org.id);
      // free plan: 3 forward destinations per endpoint
      for (let i = 0; i < 3; i++) assert.equal((await post({ name: `d${i}`, url: 'https://x.example', endpoint_id: ep.id })).status, 201);
      const r = await post({ name: 'fourth', url: 'https://x.example', endpoint_id: ep.id });
      assert.equal(r.status, 201);
      assert.equal(r.json.attachment_error.code, 'plan_limit');
      assert.match(r.json.attachment_error.message, /free plan allows 3/);
      assert.equal(r.json.data.name, 'fourth');
      assert.equal(await forwardCount(t.db, ep.id), 3);
      assert.equal(await savedCount(t.db, s.org.id), 4);
    });

    it('the plan limit follows WEIR_PLANS', async () => {
      const custom = await buildTestApp(t.db, { plans: { ...t.config.plans, free: { ...t.config.plans.free, max_forward_destinations: 1 } } });
      try {
        const ep = await insertEndpoint(t.db, s.org.id);
        const one = await call(custom.app, 'POST', '/v1/destinations', { key: s.key, body: { name: 'a', url: 'https://x.example', endpoint_id: ep.id } });
        assert.ok(one.json.data.forward_destination_id);
        const two = await call(custom.app, 'POST', '/v1/destinations', { key: s.key, body: { name: 'b', url: 'https://x.example', endpoint_id: ep.id } });
        assert.equal(two.json.attachment_error.code, 'plan_limit');
      } finally {
        await custom.close();
      }
    });
  });

  describe('security', () => {
    it('without a key is 401', async () => {
      const r = await call(t.app, 'POST', '/v1/destinations', { body: { name: 'x', url: 'https://x.example' } });
      assert.equal(r.status, 401);
      assert.equal(r.json.error.code, 'unauthorized');
    });

    it('a custom key without destinations:write is 403 forbidden', async () => {
      const k = await addMemberWithKey(t.db, s.org.id, 'admin', ['destinations:read', 'endpoints:write']);
      const r = await post({ name: 'x', url: 'https://x.example' }, k.key);
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'forbidden');
      assert.equal(await savedCount(t.db, s.org.id), 0);
    });

    it("a viewer's full-access key is 403 forbidden (no endpoints.edit)", async () => {
      const v = await addMemberWithKey(t.db, s.org.id, 'viewer');
      const r = await post({ name: 'x', url: 'https://x.example' }, v.key);
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'forbidden');
    });

    it("attaching to another organization's endpoint reports not_found and touches nothing there", async () => {
      const other = await seedOrg(t.db);
      const ep = await insertEndpoint(t.db, other.org.id);
      const r = await post({ name: 'x', url: 'https://x.example', endpoint_id: ep.id });
      assert.equal(r.status, 201);
      assert.equal(r.json.attachment_error.code, 'not_found');
      assert.equal(await forwardCount(t.db, ep.id), 0);
    });
  });
});
