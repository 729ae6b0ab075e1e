import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { findAgentByToken } from '../../src/agents/agents.ts';
import { newId } from '../../src/db/ids.ts';
import { addMemberWithKey, call, seedOrg, type Seeded, useTestApp } from '../helpers/app.ts';

describe('/v1/agents', () => {
  const t = useTestApp();
  let s: Seeded;
  beforeEach(async () => {
    s = await seedOrg(t.db, { plan: 'free', role: 'admin' });
  });

  const enroll = async (body: Record<string, unknown> = { name: 'laptop' }, key = s.key) => call(t.app, 'POST', '/v1/agents', { key, body });
  const agentRow = async (id: string) => (await t.db.query(`select name, environment, revoked_at from agents where id = $1::uuid`, [id])).rows[0];

  describe('happy', () => {
    it('enrolls an agent (development by default) and shows its token and connect command once', async () => {
      const r = await enroll();
      assert.equal(r.status, 201);
      const a = r.json.data;
      assert.equal(a.name, 'laptop');
      assert.equal(a.environment, 'development');
      assert.equal(a.status, 'disconnected');
      assert.equal(a.node, null);
      assert.match(a.token, /^wr_agent_/);
      assert.equal(a.command, `npx weir agent --server http://api.test --token ${a.token}`);
      assert.equal((await findAgentByToken(t.db, a.token))?.id, a.id);
      const got = await call(t.app, 'GET', `/v1/agents/${a.id}`, { key: s.key });
      assert.equal(got.status, 200);
      assert.equal(got.json.data.token, undefined, 'the token is shown only at enrollment');
      assert.deepEqual(Object.keys(got.json.data).sort(), [
        'agent_version', 'connected_at', 'created_at', 'environment', 'hostname', 'id', 'last_seen_at', 'name', 'node', 'revoked_at', 'status', 'updated_at',
      ]);
    });

    it('lists agents newest first, paged, without revoked ones unless asked', async () => {
      const ids: string[] = [];
      for (const name of ['a', 'b', 'c']) ids.push((await enroll({ name })).json.data.id);
      await call(t.app, 'DELETE', `/v1/agents/${ids[1]}`, { key: s.key });
      const page1 = await call(t.app, 'GET', '/v1/agents?limit=1', { key: s.key });
      assert.deepEqual(page1.json.data.data.map((a: { name: string }) => a.name), ['c']);
      assert.deepEqual(page1.json.data.meta, { count: 1, has_more: true, next_cursor: ids[2] });
      const page2 = await call(t.app, 'GET', `/v1/agents?limit=1&before=${ids[2]}`, { key: s.key });
      assert.deepEqual(page2.json.data.data.map((a: { name: string }) => a.name), ['a']);
      const all = await call(t.app, 'GET', '/v1/agents?include_revoked=true', { key: s.key });
      assert.deepEqual(all.json.data.data.map((a: { name: string }) => a.name), ['c', 'b', 'a']);
      assert.ok(all.json.data.data[1].revoked_at);
    });

    it('renames and changes environment, recording both in the audit log', async () => {
      const id = (await enroll()).json.data.id;
      const r = await call(t.app, 'PATCH', `/v1/agents/${id}`, { key: s.key, body: { name: ' ci runner ', environment: 'production' } });
      assert.equal(r.status, 200);
      assert.equal(r.json.data.name, 'ci runner');
      assert.equal(r.json.data.environment, 'production');
      const { rows } = await t.db.query<{ details: unknown }>(`select details from audit_log where action = 'agent.updated' and target_id = $1::uuid`, [id]);
      assert.deepEqual(rows[0].details, { name: { from: 'laptop', to: 'ci runner' }, environment: { from: 'development', to: 'production' } });
    });

    it('re-issues the token: the old one stops at once, the new one works', async () => {
      const first = (await enroll()).json.data;
      const r = await call(t.app, 'POST', `/v1/agents/${first.id}/token`, { key: s.key });
      assert.equal(r.status, 200);
      assert.notEqual(r.json.data.token, first.token);
      assert.equal(await findAgentByToken(t.db, first.token), undefined);
      assert.equal((await findAgentByToken(t.db, r.json.data.token))?.id, first.id);
    });

    it('revokes (idempotently): the token stops and the agent frees its production slot', async () => {
      const a = (await enroll({ name: 'prod', environment: 'production' })).json.data;
      assert.equal((await enroll({ name: 'second', environment: 'production' })).status, 403, 'free allows one production agent');
      assert.equal((await call(t.app, 'DELETE', `/v1/agents/${a.id}`, { key: s.key })).status, 204);
      assert.equal((await call(t.app, 'DELETE', `/v1/agents/${a.id}`, { key: s.key })).status, 204);
      assert.equal(await findAgentByToken(t.db, a.token), undefined);
      assert.equal((await enroll({ name: 'second', environment: 'production' })).status, 201);
      const { rows } = await t.db.query(`select 1 from audit_log where action = 'agent.revoked' and target_id = $1::uuid`, [a.id]);
      assert.equal(rows.length, 1, 'the second revoke records nothing');
    });
  });

  describe('errors', () => {
    it('refuses bad bodies with 400 and changes nothing', async () => {
      for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 'a', environment: 'staging' }, { name: 'a', extra: 1 }, { name: 5 }]) {
        const r = await enroll(body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, 'bad_request');
      }
      const id = (await enroll()).json.data.id;
      for (const body of [{}, { name: '   ' }, { environment: 'prod' }, { token: 'x' }]) {
        const r = await call(t.app, 'PATCH', `/v1/agents/${id}`, { key: s.key, body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.json.error.code, 'bad_request');
      }
      assert.deepEqual(await agentRow(id), { name: 'laptop', environment: 'development', revoked_at: null });
      assert.equal((await call(t.app, 'GET', '/v1/agents?limit=0', { key: s.key })).status, 400);
      assert.equal((await call(t.app, 'GET', '/v1/agents?before=nope', { key: s.key })).status, 400);
    });

    it('answers plan_limit when enrolling or marking production beyond max_agents, never for development', async () => {
      assert.equal((await enroll({ name: 'p1', environment: 'production' })).status, 201);
      const over = await enroll({ name: 'p2', environment: 'production' });
      assert.equal(over.status, 403);
      assert.equal(over.json.error.code, 'plan_limit');
      const dev = (await enroll({ name: 'd1' })).json.data;
      const promote = await call(t.app, 'PATCH', `/v1/agents/${dev.id}`, { key: s.key, body: { environment: 'production' } });
      assert.equal(promote.status, 403);
      assert.equal(promote.json.error.code, 'plan_limit');
      assert.equal((await agentRow(dev.id)).environment, 'development');
      // renaming a production agent does not count it again
      const { rows } = await t.db.query<{ id: string }>(`select id from agents where name = 'p1'`);
      assert.equal((await call(t.app, 'PATCH', `/v1/agents/${rows[0].id}`, { key: s.key, body: { name: 'p1b', environment: 'production' } })).status, 200);
    });

    it('answers 404 for unknown, malformed and other organizations\' ids, 409 for changes to a revoked agent', async () => {
      const other = await seedOrg(t.db, { plan: 'free', role: 'admin' });
      const theirs = (await enroll({ name: 'theirs' }, other.key)).json.data.id;
      for (const id of [newId(), 'nope', theirs]) {
        assert.equal((await call(t.app, 'GET', `/v1/agents/${id}`, { key: s.key })).status, 404);
        assert.equal((await call(t.app, 'PATCH', `/v1/agents/${id}`, { key: s.key, body: { name: 'x' } })).status, 404);
        assert.equal((await call(t.app, 'POST', `/v1/agents/${id}/token`, { key: s.key })).status, 404);
        assert.equal((await call(t.app, 'DELETE', `/v1/agents/${id}`, { key: s.key })).status, 404);
      }
      assert.equal((await agentRow(theirs)).revoked_at, null);
      const mine = (await enroll()).json.data.id;
      await call(t.app, 'DELETE', `/v1/agents/${mine}`, { key: s.key });
      const r = await call(t.app, 'PATCH', `/v1/agents/${mine}`, { key: s.key, body: { name: 'back' } });
      assert.equal(r.status, 409);
      assert.equal(r.json.error.code, 'conflict');
      assert.equal((await call(t.app, 'POST', `/v1/agents/${mine}/token`, { key: s.key })).status, 409);
    });
  });

  describe('security', () => {
    it('lets every role read but only admins manage; custom keys need destinations:read / destinations:write', async () => {
      const id = (await enroll()).json.data.id;
      const viewer = await addMemberWithKey(t.db, s.org.id, 'viewer');
      const developer = await addMemberWithKey(t.db, s.org.id, 'developer');
      const readOnly = await addMemberWithKey(t.db, s.org.id, 'admin', ['destinations:read']);
      const endpointsOnly = await addMemberWithKey(t.db, s.org.id, 'admin', ['endpoints:read']);
      for (const k of [viewer.key, developer.key, readOnly.key]) {
        assert.equal((await call(t.app, 'GET', '/v1/agents', { key: k })).status, 200);
        assert.equal((await call(t.app, 'GET', `/v1/agents/${id}`, { key: k })).status, 200);
      }
      assert.equal((await call(t.app, 'GET', '/v1/agents', { key: endpointsOnly.key })).status, 403);
      for (const k of [viewer.key, developer.key, readOnly.key]) {
        for (const [method, url, body] of [
          ['POST', '/v1/agents', { name: 'x' }],
          ['PATCH', `/v1/agents/${id}`, { name: 'x' }],
          ['POST', `/v1/agents/${id}/token`, undefined],
          ['DELETE', `/v1/agents/${id}`, undefined],
        ] as const) {
          const r = await call(t.app, method, url, { key: k, body });
          assert.equal(r.status, 403, `${method} ${url}`);
          assert.equal(r.json.error.code, 'forbidden');
        }
      }
      assert.deepEqual(await agentRow(id), { name: 'laptop', environment: 'development', revoked_at: null });
      assert.equal((await call(t.app, 'GET', '/v1/agents', {})).status, 401);
    });
  });
});
