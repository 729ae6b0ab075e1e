import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { enrollAgent, findAgentByToken, getAgent, hashAgentToken, listAgents } from '../../src/agents/agents.ts';
import { newId } from '../../src/db/ids.ts';
import { createOrganization } from '../../src/orgs/organizations.ts';
import { DEFAULT_PLANS, type PlanTable } from '../../src/orgs/plans.ts';
import { openTestDb, type TestDb } from '../helpers/db.ts';

function plansWith(maxAgents: number): PlanTable {
  const plans = structuredClone(DEFAULT_PLANS);
  plans.free.max_agents = maxAgents;
  return plans;
}

describe('agents domain', () => {
  let t: TestDb;
  before(async () => {
    t = await openTestDb();
  });
  beforeEach(async () => {
    await t.reset();
  });
  after(async () => {
    await t.close();
  });

  const org = (plan: 'free' | 'starter' = 'free') => createOrganization(t.db, { name: 'Acme', plan, region: 'us' });

  describe('happy', () => {
    it('enrolls an agent and returns a token that is stored only as a hash', async () => {
      const o = await org();
      const r = await enrollAgent(t.db, { organizationId: o.id, name: '  laptop  ', environment: 'development', createdBy: null }, DEFAULT_PLANS);
      assert.ok(r.ok);
      assert.match(r.token, /^wr_agent_[A-Za-z0-9_-]{43}$/);
      assert.equal(r.agent.name, 'laptop');
      assert.equal(r.agent.environment, 'development');
      assert.equal(r.agent.organization_id, o.id);
      const { rows } = await t.db.query<{ token_hash: Buffer }>('select token_hash from agents where id = $1::uuid', [r.agent.id]);
      assert.deepEqual(Buffer.from(rows[0].token_hash), hashAgentToken(r.token));
      assert.equal((await findAgentByToken(t.db, r.token))?.id, r.agent.id);
      assert.equal((await getAgent(t.db, o.id, r.agent.id))?.id, r.agent.id);
    });

    it('records the enrollment in the audit log with the operator or member as actor', async () => {
      const o = await org();
      const r = await enrollAgent(t.db, { organizationId: o.id, name: 'ci', environment: 'production', createdBy: null }, DEFAULT_PLANS);
      assert.ok(r.ok);
      const { rows } = await t.db.query<{ action: string; actor_type: string; target_id: string }>(
        `select action, actor_type, target_id from audit_log where organization_id = $1::uuid and action = 'agent.enrolled'`,
        [o.id],
      );
      assert.deepEqual(rows, [{ action: 'agent.enrolled', actor_type: 'operator', target_id: r.agent.id }]);
    });

    it('lists agents newest first, without revoked ones unless asked, paged by id', async () => {
      const o = await org('starter');
      const ids: string[] = [];
      for (const name of ['a', 'b', 'c']) {
        const r = await enrollAgent(t.db, { organizationId: o.id, name, environment: 'development', createdBy: null }, DEFAULT_PLANS);
        assert.ok(r.ok);
        ids.push(r.agent.id);
      }
      await t.db.query('update agents set revoked_at = now() where id = $1::uuid', [ids[1]]);
      assert.deepEqual((await listAgents(t.db, o.id)).map((a) => a.name), ['c', 'a']);
      assert.deepEqual((await listAgents(t.db, o.id, { includeRevoked: true })).map((a) => a.name), ['c', 'b', 'a']);
      assert.deepEqual((await listAgents(t.db, o.id, { includeRevoked: true, before: ids[2], limit: 1 })).map((a) => a.name), ['b']);
    });

    it('caps production agents only: development agents enroll past the plan limit', async () => {
      const o = await org();
      const plans = plansWith(1);
      const first = await enrollAgent(t.db, { organizationId: o.id, name: 'prod', environment: 'production', createdBy: null }, plans);
      assert.ok(first.ok);
      for (let i = 0; i < 3; i++) {
        const dev = await enrollAgent(t.db, { organizationId: o.id, name: `dev${i}`, environment: 'development', createdBy: null }, plans);
        assert.ok(dev.ok);
      }
    });

    it('frees a production slot when an agent is revoked', async () => {
      const o = await org();
      const plans = plansWith(1);
      const first = await enrollAgent(t.db, { organizationId: o.id, name: 'one', environment: 'production', createdBy: null }, plans);
      assert.ok(first.ok);
      await t.db.query('update agents set revoked_at = now() where id = $1::uuid', [first.agent.id]);
      assert.ok((await enrollAgent(t.db, { organizationId: o.id, name: 'two', environment: 'production', createdBy: null }, plans)).ok);
      assert.equal(await findAgentByToken(t.db, first.token), undefined);
    });
  });

  describe('errors', () => {
    it('refuses a production agent past max_agents with plan_limit and stores nothing', async () => {
      const o = await org();
      const plans = plansWith(2);
      for (const name of ['p1', 'p2']) assert.ok((await enrollAgent(t.db, { organizationId: o.id, name, environment: 'production', createdBy: null }, plans)).ok);
      const r = await enrollAgent(t.db, { organizationId: o.id, name: 'p3', environment: 'production', createdBy: null }, plans);
      assert.equal(r.ok, false);
      assert.ok(!r.ok && r.reason === 'plan_limit' && r.limit === 2);
      assert.match(!r.ok && r.reason === 'plan_limit' ? r.message : '', /free plan allows 2 production agents/);
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from agents where organization_id = $1::uuid', [o.id]);
      assert.equal(rows[0].n, 2);
    });

    it('refuses an empty or overlong name and an unknown environment', async () => {
      const o = await org();
      for (const [name, environment] of [
        ['   ', 'development'],
        ['x'.repeat(101), 'development'],
        ['ok', 'staging'],
      ] as const) {
        const r = await enrollAgent(t.db, { organizationId: o.id, name, environment: environment as 'development', createdBy: null }, DEFAULT_PLANS);
        assert.ok(!r.ok && r.reason === 'invalid', `${name} ${environment}`);
      }
    });

    it('answers organization_not_found for an unknown organization', async () => {
      const r = await enrollAgent(t.db, { organizationId: newId(), name: 'x', environment: 'production', createdBy: null }, DEFAULT_PLANS);
      assert.ok(!r.ok && r.reason === 'organization_not_found');
    });

    it('finds no agent for a malformed or unknown token', async () => {
      assert.equal(await findAgentByToken(t.db, 'nope'), undefined);
      assert.equal(await findAgentByToken(t.db, 'wr_agent_' + 'A'.repeat(43)), undefined);
    });
  });

  describe('security', () => {
    it("does not return another organization's agent", async () => {
      const a = await org();
      const b = await org();
      const r = await enrollAgent(t.db, { organizationId: a.id, name: 'x', environment: 'development', createdBy: null }, DEFAULT_PLANS);
      assert.ok(r.ok);
      assert.equal(await getAgent(t.db, b.id, r.agent.id), undefined);
      assert.deepEqual(await listAgents(t.db, b.id), []);
    });

    it('never lets concurrent production enrollments exceed max_agents', async () => {
      const o = await org();
      const plans = plansWith(3);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => enrollAgent(t.db, { organizationId: o.id, name: `p${i}`, environment: 'production', createdBy: null }, plans)),
      );
      assert.equal(results.filter((r) => r.ok).length, 3);
      assert.equal(results.filter((r) => !r.ok && r.reason === 'plan_limit').length, 5);
      const { rows } = await t.db.query<{ n: number }>(`select count(*)::int as n from agents where organization_id = $1::uuid and environment = 'production'`, [o.id]);
      assert.equal(rows[0].n, 3);
    });
  });
});
