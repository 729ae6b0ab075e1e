import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { Agent } from '../../src/agents/agents.ts';
import { PERMISSIONS } from '../../src/auth/permissions.ts';
import { newId } from '../../src/db/ids.ts';
import { addMemberWithKey, call, seedOrg, type Seeded, useTestApp } from '../helpers/app.ts';
import { insertEndpoint, type EndpointFixture } from '../helpers/fixtures.ts';
import { destinationState, enrolled, forwardCount, savedCount } from './helpers.ts';

describe('POST /v1/destinations (agent flow)', () => {
  const t = useTestApp();
  let s: Seeded;
  let ep: EndpointFixture;
  let agent: Agent;
  beforeEach(async () => {
    s = await seedOrg(t.db, { plan: 'free', role: 'developer' });
    ep = await insertEndpoint(t.db, s.org.id);
    agent = await enrolled(t.db, s.org.id, 'production');
  });

  const post = (body: Record<string, unknown>, key = s.key) => call(t.app, 'POST', '/v1/destinations', { key, body });
  const valid = () => ({ name: 'Laptop', destination_type: 'agent', endpoint_id: ep.id, agent_id: agent.id, target_port: 3000, target_path: '/webhooks' });

  describe('happy', () => {
    it('creates a forward destination: enabled, url null, environment_override null, no saved record', async () => {
      const r = await post(valid());
      assert.equal(r.status, 201);
      const d = r.json.data;
      assert.match(d.id, /^[0-9a-f-]{36}$/);
      assert.equal(d.name, 'Laptop');
      assert.equal(d.destination_type, 'agent');
      assert.equal(d.url, null);
      assert.equal(d.agent_id, agent.id);
      assert.equal(d.target_port, 3000);
      assert.equal(d.target_path, '/webhooks');
      assert.equal(d.enabled, true);
      assert.equal(d.method_override, null);
      assert.equal(d.environment_override, null);
      assert.equal(d.endpoint_id, ep.id);
      assert.equal(d.saved_destination_id, null);
      // agents retry by environment: the https retry settings do not apply
      assert.equal(d.retry_enabled, null);
      assert.equal(d.retry_schedule, null);
      assert.equal(d.intelligent_retry, null);
      assert.equal(d.rate_limit_enabled, false);
      assert.ok(!Number.isNaN(Date.parse(d.created_at)));
      assert.equal('attachment_error' in r.json, false);
      assert.equal(await savedCount(t.db, s.org.id), 0);
      const list = await call(t.app, 'GET', '/v1/destinations', { key: s.key });
      assert.deepEqual(list.json.data.data, [], 'agent destinations never appear among saved destinations');
    });

    it('accepts environment_override "development", a method override and a rate limit', async () => {
      const r = await post({ ...valid(), environment_override: 'development', method_override: 'POST', rate_limit_enabled: true, rate_limit_per_minute: 30 });
      assert.equal(r.status, 201);
      assert.equal(r.json.data.environment_override, 'development');
      assert.equal(r.json.data.method_override, 'POST');
      assert.equal(r.json.data.rate_limit_enabled, true);
      assert.equal(r.json.data.rate_limit_per_minute, 30);
    });

    it('accepts the port bounds 1 and 65535', async () => {
      assert.equal((await post({ ...valid(), target_port: 1 })).status, 201);
      assert.equal((await post({ ...valid(), target_port: 65535 })).status, 201);
    });

    it('assigning agents does not count against max_agents (a development agent, many destinations)', async () => {
      const dev = await enrolled(t.db, s.org.id, 'development');
      const ep2 = await insertEndpoint(t.db, s.org.id);
      for (const e of [ep, ep2]) {
        for (const a of [agent, dev]) assert.equal((await post({ ...valid(), endpoint_id: e.id, agent_id: a.id })).status, 201);
      }
      const r = await post({ ...valid(), endpoint_id: ep2.id });
      assert.equal(r.status, 201);
      assert.equal('usage' in r.json, false);
    });
  });

  describe('errors', () => {
    for (const field of ['endpoint_id', 'agent_id', 'target_port', 'target_path'] as const) {
      it(`without ${field} is 400 missing_field`, async () => {
        const body: Record<string, unknown> = valid();
        delete body[field];
        const r = await post(body);
        assert.equal(r.status, 400);
        assert.equal(r.json.error.code, 'missing_field');
        assert.match(r.json.error.message, new RegExp(`"${field}"`));
        assert.equal(await forwardCount(t.db, ep.id), 0);
      });
    }

    it('names every missing field at once', async () => {
      const r = await post({ name: 'x', destination_type: 'agent' });
      assert.equal(r.json.error.code, 'missing_field');
      for (const f of ['endpoint_id', 'agent_id', 'target_port', 'target_path']) assert.match(r.json.error.message, new RegExp(f));
    });

    const badRequests: [string, Record<string, unknown>][] = [
      ['port 0', { target_port: 0 }],
      ['port 65536', { target_port: 65536 }],
      ['port -1', { target_port: -1 }],
      ['port as text', { target_port: '3000' }],
      ['port fractional', { target_port: 80.5 }],
      ['path without leading slash', { target_path: 'webhooks' }],
      ['path empty', { target_path: '' }],
      ['path with a space', { target_path: '/a b' }],
      ['environment_override production', { environment_override: 'production' }],
      ['environment_override staging', { environment_override: 'staging' }],
      ['url sent', { url: 'https://x.example' }],
      ['visibility sent', { visibility: 'org' }],
      ['is_reusable sent', { is_reusable: true }],
      ['retry settings sent', { retry_enabled: false }],
      ['retry schedule sent', { retry_schedule: [5] }],
      ['intelligent_retry sent', { intelligent_retry: true }],
      ['rate limit without a rate', { rate_limit_enabled: true }],
      ['bad method', { method_override: 'TRACE' }],
      ['malformed agent_id', { agent_id: 'agent-1' }],
      ['unknown field', { host: '127.0.0.1' }],
      ['name missing', { name: undefined }],
    ];
    for (const [what, change] of badRequests) {
      it(`${what} is 400 bad_request and creates nothing`, async () => {
        const before = await destinationState(t.db);
        const body = { ...valid(), ...change };
        const r = await post(JSON.parse(JSON.stringify(body)));
        assert.equal(r.status, 400);
        assert.equal(r.json.error.code, 'bad_request');
        assert.equal('attachment_error' in r.json, false);
        assert.deepEqual(await destinationState(t.db), before);
      });
    }

    it('an agent unknown in the organization is 400 bad_request', async () => {
      const r = await post({ ...valid(), agent_id: newId() });
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'bad_request');
      assert.match(r.json.error.message, /not found/);
    });

    it('a revoked agent is 400 bad_request', async () => {
      await t.db.query('update agents set revoked_at = now() where id = $1::uuid', [agent.id]);
      const r = await post(valid());
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'bad_request');
    });

    it('an unknown endpoint is 404 not_found as a top-level error', async () => {
      const r = await post({ ...valid(), endpoint_id: newId() });
      assert.equal(r.status, 404);
      assert.equal(r.json.error.code, 'not_found');
      assert.equal('attachment_error' in r.json, false);
    });

    it('past max_forward_destinations is 403 plan_limit and creates nothing', async () => {
      for (let i = 0; i < 3; i++) assert.equal((await post({ ...valid(), name: `d${i}` })).status, 201);
      const before = await destinationState(t.db);
      const r = await post(valid());
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'plan_limit');
      assert.equal('attachment_error' in r.json, false);
      assert.deepEqual(await destinationState(t.db), before);
    });

    it('https and agent destinations share the per-endpoint limit, disabled ones included', async () => {
      for (let i = 0; i < 2; i++) {
        const r = await call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name: `h${i}`, url: 'https://x.example', endpoint_id: ep.id } });
        assert.ok(r.json.data.forward_destination_id);
      }
      const third = await post(valid());
      assert.equal(third.status, 201);
      const off = await call(t.app, 'PATCH', `/v1/endpoints/${ep.id}/destinations/${third.json.data.id}`, { key: s.key, body: { enabled: false } });
      assert.equal(off.status, 200);
      const r = await post(valid());
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'plan_limit');
    });
  });

  describe('security', () => {
    it("a viewer's full-access key cannot create an agent destination", async () => {
      const v = await addMemberWithKey(t.db, s.org.id, 'viewer');
      const r = await post(valid(), v.key);
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'forbidden');
      assert.equal(await forwardCount(t.db, ep.id), 0);
    });

    it('checks agents.assign_destination on its own, beyond the route-wide endpoints.edit', async () => {
      // Today every role holding endpoints.edit also holds agents.assign_destination;
      // narrow the matrix for this test to prove the route checks the agent permission itself.
      const table = PERMISSIONS as unknown as Record<string, readonly string[]>;
      const original = table['agents.assign_destination'];
      table['agents.assign_destination'] = ['super_admin', 'admin'];
      try {
        const r = await post(valid());
        assert.equal(r.status, 403);
        assert.equal(r.json.error.code, 'forbidden');
        assert.match(r.json.error.message, /agents\.assign_destination/);
        const https = await post({ name: 'h', url: 'https://x.example', endpoint_id: ep.id });
        assert.equal(https.status, 201, 'the https flow does not need the agent permission');
      } finally {
        table['agents.assign_destination'] = original;
      }
      assert.equal(await forwardCount(t.db, ep.id), 1);
    });

    it('the same rule holds on the sibling routes: changing or removing an agent destination needs agents.assign_destination too', async () => {
      const created = await post(valid());
      assert.equal(created.status, 201);
      const url = `/v1/endpoints/${ep.id}/destinations/${created.json.data.id}`;
      const table = PERMISSIONS as unknown as Record<string, readonly string[]>;
      const original = table['agents.assign_destination'];
      table['agents.assign_destination'] = ['super_admin', 'admin'];
      try {
        for (const [method, body] of [['PATCH', { name: 'renamed' }], ['DELETE', undefined]] as const) {
          const r = await call(t.app, method, url, { key: s.key, body });
          assert.equal(r.status, 403, method);
          assert.equal(r.json.error.code, 'forbidden');
          assert.match(r.json.error.message, /agents\.assign_destination/);
        }
      } finally {
        table['agents.assign_destination'] = original;
      }
      const [row] = (await t.db.query<{ name: string }>('select name from forward_destinations where id = $1', [created.json.data.id])).rows;
      assert.equal(row.name, created.json.data.name, 'neither the refused PATCH nor the refused DELETE changed it');
      assert.equal((await call(t.app, 'PATCH', url, { key: s.key, body: { name: 'renamed' } })).status, 200);
      assert.equal((await call(t.app, 'DELETE', url, { key: s.key })).status, 204);
    });

    it('a custom key without destinations:write is 403 forbidden', async () => {
      const k = await addMemberWithKey(t.db, s.org.id, 'developer', ['destinations:read', 'endpoints:write']);
      const r = await post(valid(), k.key);
      assert.equal(r.status, 403);
      assert.equal(r.json.error.code, 'forbidden');
    });

    it('a custom key with destinations:write of a developer creates', async () => {
      const k = await addMemberWithKey(t.db, s.org.id, 'developer', ['destinations:write']);
      assert.equal((await post(valid(), k.key)).status, 201);
    });

    it("another organization's agent is 400 bad_request, as if unknown", async () => {
      const other = await seedOrg(t.db);
      const foreign = await enrolled(t.db, other.org.id);
      const r = await post({ ...valid(), agent_id: foreign.id });
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'bad_request');
      assert.equal(await forwardCount(t.db, ep.id), 0);
    });

    it("another organization's endpoint is 404 not_found", async () => {
      const other = await seedOrg(t.db);
      const foreignEp = await insertEndpoint(t.db, other.org.id);
      const r = await post({ ...valid(), endpoint_id: foreignEp.id });
      assert.equal(r.status, 404);
      assert.equal(r.json.error.code, 'not_found');
      assert.equal(await forwardCount(t.db, foreignEp.id), 0);
    });

    it('concurrent creations never exceed max_forward_destinations', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => post({ ...valid(), name: `c${i}` })));
      assert.equal(results.filter((r) => r.status === 201).length, 3);
      assert.equal(results.filter((r) => r.status === 403 && r.json.error.code === 'plan_limit').length, 5);
      assert.equal(await forwardCount(t.db, ep.id), 3);
    });
  });
});
