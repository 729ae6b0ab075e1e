import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { Agent } from '../../src/agents/agents.ts';
import { newId } from '../../src/db/ids.ts';
import { addMemberWithKey, call, seedOrg, type Seeded, useTestApp } from '../helpers/app.ts';
import { insertEndpoint, type EndpointFixture } from '../helpers/fixtures.ts';
import { destinationState, enrolled, forwardCount } from './helpers.ts';

const ITEM_FIELDS = [
  'id',
  'name',
  'url',
  'enabled',
  'method_override',
  'created_at',
  'destination_type',
  'agent_id',
  'target_port',
  'target_path',
  'environment_override',
  'retry_enabled',
  'retry_schedule',
  'intelligent_retry',
  'rate_limit_enabled',
  'rate_limit_per_minute',
  'sort_order',
];

describe('forward destinations: /v1/endpoints/:id/destinations', () => {
  const t = useTestApp();
  let s: Seeded;
  let ep: EndpointFixture;
  let agent: Agent;
  beforeEach(async () => {
    s = await seedOrg(t.db, { plan: 'free', role: 'developer' });
    ep = await insertEndpoint(t.db, s.org.id);
    agent = await enrolled(t.db, s.org.id);
  });

  const https = async (name: string, endpointId = ep.id, extra: Record<string, unknown> = {}) => {
    const r = await call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name, url: `https://${name}.example/in`, endpoint_id: endpointId, ...extra } });
    assert.ok(r.json.data.forward_destination_id, JSON.stringify(r.json));
    return { saved: r.json.data.id as string, id: r.json.data.forward_destination_id as string };
  };
  const agentDest = async (name: string, extra: Record<string, unknown> = {}) => {
    const r = await call(t.app, 'POST', '/v1/destinations', {
      key: s.key,
      body: { name, destination_type: 'agent', endpoint_id: ep.id, agent_id: agent.id, target_port: 3000, target_path: '/in', ...extra },
    });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    return r.json.data.id as string;
  };
  const list = async (endpointId = ep.id, key = s.key) => call(t.app, 'GET', `/v1/endpoints/${endpointId}/destinations`, { key });
  const patch = (id: string, body: unknown, endpointId = ep.id, key = s.key) => call(t.app, 'PATCH', `/v1/endpoints/${endpointId}/destinations/${id}`, { key, body });
  const del = (id: string, endpointId = ep.id, key = s.key) => call(t.app, 'DELETE', `/v1/endpoints/${endpointId}/destinations/${id}`, { key });

  describe('happy', () => {
    it('lists https and agent destinations in sort_order, appended in creation order, with every field', async () => {
      const a = await https('a');
      const b = await agentDest('b');
      const c = await https('c');
      const r = await list();
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.json), ['data']);
      assert.deepEqual(Object.keys(r.json.data), ['data']);
      const items = r.json.data.data;
      assert.deepEqual(items.map((d: any) => d.id), [a.id, b, c.id]);
      assert.deepEqual(items.map((d: any) => d.sort_order), [1, 2, 3]);
      for (const item of items) for (const f of ITEM_FIELDS) assert.ok(f in item, f);
      assert.deepEqual(items.map((d: any) => d.destination_type), ['https', 'agent', 'https']);
      assert.equal(items[1].url, null);
      assert.equal(items[1].target_port, 3000);
    });

    it("does not list the endpoint's own forward_url: it is not a forward destination", async () => {
      const withUrl = await insertEndpoint(t.db, s.org.id, { forwardUrl: 'https://implicit.example' });
      const r = await list(withUrl.id);
      assert.equal(r.status, 200);
      assert.deepEqual(r.json.data.data, []);
    });

    it('appends after the highest sort_order, even after reordering and deleting', async () => {
      const a = await https('a');
      const b = await https('b');
      assert.equal((await patch(a.id, { sort_order: 10 })).json.data.sort_order, 10);
      assert.equal((await del(b.id)).status, 204);
      const c = await agentDest('c');
      assert.deepEqual((await list()).json.data.data.map((d: any) => [d.id, d.sort_order]), [
        [a.id, 10],
        [c, 11],
      ]);
    });

    it('PATCH sort_order reorders; equal orders keep creation order', async () => {
      const a = await https('a');
      const b = await https('b');
      const c = await https('c');
      await patch(c.id, { sort_order: 0 });
      await patch(b.id, { sort_order: 1 });
      assert.deepEqual((await list()).json.data.data.map((d: any) => d.id), [c.id, a.id, b.id]);
    });

    it('PATCH edits name, enabled and method_override, and null restores the original method', async () => {
      const a = await https('a');
      const r = await patch(a.id, { name: 'renamed', enabled: false, method_override: 'PUT' });
      assert.equal(r.status, 200);
      assert.equal(r.json.data.name, 'renamed');
      assert.equal(r.json.data.enabled, false);
      assert.equal(r.json.data.method_override, 'PUT');
      assert.equal((await patch(a.id, { method_override: null })).json.data.method_override, null);
      const stored = (await list()).json.data.data[0];
      assert.equal(stored.name, 'renamed');
      assert.equal(stored.enabled, false);
    });

    it('PATCH edits retry and rate settings of an https destination', async () => {
      const a = await https('a');
      const r = await patch(a.id, { retry_enabled: false, retry_schedule: [1, 2, 3], intelligent_retry: false, rate_limit_per_minute: 600, rate_limit_enabled: true });
      assert.equal(r.status, 200);
      assert.equal(r.json.data.retry_enabled, false);
      assert.deepEqual(r.json.data.retry_schedule, [1, 2, 3]);
      assert.equal(r.json.data.intelligent_retry, false);
      assert.equal(r.json.data.rate_limit_enabled, true);
      assert.equal(r.json.data.rate_limit_per_minute, 600);
      const off = await patch(a.id, { rate_limit_enabled: false, rate_limit_per_minute: null });
      assert.equal(off.status, 200);
      assert.equal(off.json.data.rate_limit_per_minute, null);
      // a rate stored earlier lets the limit be switched on alone
      await patch(a.id, { rate_limit_per_minute: 60 });
      assert.equal((await patch(a.id, { rate_limit_enabled: true })).status, 200);
    });

    it('PATCH edits the target and environment override of an agent destination', async () => {
      const id = await agentDest('a');
      const r = await patch(id, { target_port: 8080, target_path: '/hooks/stripe?x=1', environment_override: 'development', rate_limit_enabled: true, rate_limit_per_minute: 5 });
      assert.equal(r.status, 200);
      assert.equal(r.json.data.target_port, 8080);
      assert.equal(r.json.data.target_path, '/hooks/stripe?x=1');
      assert.equal(r.json.data.environment_override, 'development');
      assert.equal(r.json.data.rate_limit_per_minute, 5);
      assert.equal((await patch(id, { environment_override: null })).json.data.environment_override, null);
    });

    it('DELETE answers 204, removes it and frees a slot under the plan limit', async () => {
      const ids = [(await https('a')).id, (await https('b')).id, await agentDest('c')];
      const r = await del(ids[1]);
      assert.equal(r.status, 204);
      assert.deepEqual((await list()).json.data.data.map((d: any) => d.id), [ids[0], ids[2]]);
      await agentDest('d');
      assert.equal(await forwardCount(t.db, ep.id), 3);
    });

    it('attaches a saved destination of the library to another endpoint', async () => {
      const first = await https('lib');
      const ep2 = await insertEndpoint(t.db, s.org.id, { name: 'Second' });
      const r = await call(t.app, 'POST', `/v1/endpoints/${ep2.id}/destinations`, { key: s.key, body: { destination_id: first.saved, method_override: 'PATCH' } });
      assert.equal(r.status, 201);
      assert.equal(r.json.data.destination_type, 'https');
      assert.equal(r.json.data.url, 'https://lib.example/in');
      assert.equal(r.json.data.name, 'lib');
      assert.equal(r.json.data.saved_destination_id, first.saved);
      assert.equal(r.json.data.method_override, 'PATCH');
      const saved = await call(t.app, 'GET', `/v1/destinations/${first.saved}`, { key: s.key });
      assert.deepEqual(saved.json.data.endpoints.map((e: any) => [e.endpoint_name, e.forward_destination_id]), [
        [ep.name, first.id],
        ['Second', r.json.data.id],
      ]);
    });
  });

  describe('errors', () => {
    it('unknown, malformed and mismatched ids are 404 not_found', async () => {
      const a = await https('a');
      const ep2 = await insertEndpoint(t.db, s.org.id);
      assert.equal((await list(newId())).status, 404);
      assert.equal((await list('nope')).json.error.code, 'not_found');
      for (const [id, endpointId] of [
        [newId(), ep.id],
        ['nope', ep.id],
        [a.id, ep2.id], // exists, but on another endpoint
        [a.id, 'nope'],
      ]) {
        assert.equal((await patch(id, { name: 'x' }, endpointId)).status, 404, `PATCH ${id} on ${endpointId}`);
        assert.equal((await del(id, endpointId)).status, 404, `DELETE ${id} on ${endpointId}`);
      }
      assert.equal(await forwardCount(t.db, ep.id), 1);
    });

    it('a refused PATCH is 400 bad_request and changes nothing', async () => {
      const h = await https('h');
      const a = await agentDest('a');
      const before = await destinationState(t.db);
      const cases: [string, unknown][] = [
        [h.id, {}],
        [h.id, { name: '' }],
        [h.id, { name: 'x'.repeat(101) }],
        [h.id, { enabled: 'no' }],
        [h.id, { method_override: 'BAD METHOD' }],
        [h.id, { method_override: 'TRACE' }],
        [h.id, { sort_order: -1 }],
        [h.id, { sort_order: 1.5 }],
        [h.id, { retry_schedule: [] }],
        [h.id, { retry_schedule: [0, 5] }],
        [h.id, { rate_limit_enabled: true }],
        [h.id, { rate_limit_per_minute: 0 }],
        [h.id, { name: 'fine', rate_limit_per_minute: 60001 }],
        [h.id, { target_port: 80 }],
        [h.id, { environment_override: 'development' }],
        [h.id, { url: 'https://elsewhere.example' }],
        [h.id, { destination_type: 'agent' }],
        [a, { retry_enabled: true }],
        [a, { retry_schedule: [5] }],
        [a, { intelligent_retry: false }],
        [a, { target_port: 0 }],
        [a, { target_port: 70000 }],
        [a, { target_path: 'no-slash' }],
        [a, { environment_override: 'production' }],
        [a, { agent_id: agent.id }],
      ];
      for (const [id, body] of cases) {
        const r = await patch(id, body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, 'bad_request', JSON.stringify(body));
      }
      assert.deepEqual(await destinationState(t.db), before);
    });

    it('attaching refuses an unknown saved destination (404), a second attachment to the same endpoint (409), a used one-off (400) and the plan limit (403)', async () => {
      const unknown = await call(t.app, 'POST', `/v1/endpoints/${ep.id}/destinations`, { key: s.key, body: { destination_id: newId() } });
      assert.equal(unknown.status, 404);
      const lib = await https('lib');
      const twice = await call(t.app, 'POST', `/v1/endpoints/${ep.id}/destinations`, { key: s.key, body: { destination_id: lib.saved } });
      assert.equal(twice.status, 409);
      assert.equal(twice.json.error.code, 'conflict');
      const oneOff = await https('oneoff', ep.id, { is_reusable: false });
      const ep2 = await insertEndpoint(t.db, s.org.id);
      const reuse = await call(t.app, 'POST', `/v1/endpoints/${ep2.id}/destinations`, { key: s.key, body: { destination_id: oneOff.saved } });
      assert.equal(reuse.status, 400);
      assert.equal(reuse.json.error.code, 'bad_request');
      await https('third');
      const ep3 = await insertEndpoint(t.db, s.org.id);
      const full = await call(t.app, 'POST', `/v1/endpoints/${ep.id}/destinations`, { key: s.key, body: { destination_id: (await https('other', ep3.id)).saved } });
      assert.equal(full.status, 403);
      assert.equal(full.json.error.code, 'plan_limit');
      assert.equal(await forwardCount(t.db, ep.id), 3);
      assert.equal(await forwardCount(t.db, ep2.id), 0);
    });

    it('a one-off saved destination created without an endpoint can be attached once', async () => {
      const r = await call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name: 'once', url: 'https://once.example', is_reusable: false } });
      const first = await call(t.app, 'POST', `/v1/endpoints/${ep.id}/destinations`, { key: s.key, body: { destination_id: r.json.data.id } });
      assert.equal(first.status, 201);
      const ep2 = await insertEndpoint(t.db, s.org.id);
      const second = await call(t.app, 'POST', `/v1/endpoints/${ep2.id}/destinations`, { key: s.key, body: { destination_id: r.json.data.id } });
      assert.equal(second.status, 400);
    });
  });

  describe('security', () => {
    it("another organization's endpoint and its destinations are 404", async () => {
      const other = await seedOrg(t.db);
      const theirEp = await insertEndpoint(t.db, other.org.id);
      const theirs = await call(t.app, 'POST', '/v1/destinations', { key: other.key, body: { name: 'x', url: 'https://x.example', endpoint_id: theirEp.id } });
      const fid = theirs.json.data.forward_destination_id;
      assert.equal((await list(theirEp.id)).status, 404);
      assert.equal((await patch(fid, { enabled: false }, theirEp.id)).status, 404);
      assert.equal((await del(fid, theirEp.id)).status, 404);
      // their forward destination id under my endpoint is no better
      assert.equal((await patch(fid, { enabled: false }, ep.id)).status, 404);
      const attach = await call(t.app, 'POST', `/v1/endpoints/${theirEp.id}/destinations`, { key: s.key, body: { destination_id: (await https('mine')).saved } });
      assert.equal(attach.status, 404);
      const steal = await call(t.app, 'POST', `/v1/endpoints/${ep.id}/destinations`, { key: s.key, body: { destination_id: theirs.json.data.id } });
      assert.equal(steal.status, 404);
      assert.equal((await list(theirEp.id, other.key)).json.data.data[0].enabled, true);
      assert.equal(await forwardCount(t.db, theirEp.id), 1);
    });

    it('listing needs destinations:read; a viewer may list but not change', async () => {
      const a = await https('a');
      const reader = await addMemberWithKey(t.db, s.org.id, 'viewer', ['destinations:read']);
      assert.equal((await list(ep.id, reader.key)).status, 200);
      const endpointsOnly = await addMemberWithKey(t.db, s.org.id, 'developer', ['endpoints:read', 'endpoints:write']);
      const r = await list(ep.id, endpointsOnly.key);
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'forbidden');
      const viewer = await addMemberWithKey(t.db, s.org.id, 'viewer');
      assert.equal((await list(ep.id, viewer.key)).status, 200);
      assert.equal((await patch(a.id, { enabled: false }, ep.id, viewer.key)).status, 403);
      assert.equal((await del(a.id, ep.id, viewer.key)).status, 403);
      assert.equal((await patch(a.id, { enabled: false }, ep.id, reader.key)).status, 403);
      assert.equal((await patch(a.id, { enabled: false }, ep.id, endpointsOnly.key)).status, 403, 'endpoints:write is not destinations:write');
      assert.equal((await list()).json.data.data[0].enabled, true);
    });

    it('concurrent https attachments never exceed max_forward_destinations', async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name: `c${i}`, url: 'https://c.example', endpoint_id: ep.id } })),
      );
      assert.ok(results.every((r) => r.status === 201));
      assert.equal(results.filter((r) => r.json.data.forward_destination_id).length, 3);
      assert.equal(results.filter((r) => r.json.attachment_error?.code === 'plan_limit').length, 5);
      assert.equal(await forwardCount(t.db, ep.id), 3);
      const orders = (await list()).json.data.data.map((d: any) => d.sort_order);
      assert.deepEqual(orders, [1, 2, 3]);
    });
  });
});
