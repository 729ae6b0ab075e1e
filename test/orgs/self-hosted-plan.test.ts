import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bootstrapIfEmpty } from '../../src/orgs/bootstrap.ts';
import { call, useTestApp } from '../helpers/app.ts';
import { seedIncident } from '../incidents/helpers.ts';

// Issue 28 item 3: a fresh self-hosted install holds no feature back. The
// organization the first start creates (no WEIR_PLANS) can replay an
// incident, which the specification reserves for Starter and above.

describe('the first organization of a self-hosted install', () => {
  const t = useTestApp();

  it('is on self_hosted and may replay an incident (no 403 plan_limit)', async () => {
    assert.equal(t.config.bootstrapPlan, 'self_hosted');
    const boot = await bootstrapIfEmpty(t.db, 'us', t.config.bootstrapPlan);
    assert.ok(boot, 'the database was empty');
    assert.equal(boot.organization.plan, 'self_hosted');
    const me = await call(t.app, 'GET', '/v1/me', { key: boot.key });
    assert.equal(me.json.data.organization.plan, 'self_hosted');
    assert.deepEqual(me.json.data.organization.limits, t.config.plans.self_hosted);
    const { incidentId } = await seedIncident(t.db, boot.organization.id, { n: 2 });
    const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: boot.key, body: { requests_per_minute: 60 } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.data.queued_count, 2);
    const usage = await call(t.app, 'GET', '/v1/usage', { key: boot.key });
    assert.equal(usage.status, 200);
  });

  it('is on free when the operator sells plans (WEIR_PLANS set), and free still may not replay', async () => {
    const boot = await bootstrapIfEmpty(t.db, 'us', 'free');
    assert.ok(boot);
    const { incidentId } = await seedIncident(t.db, boot.organization.id, { n: 1 });
    const r = await call(t.app, 'POST', `/v1/incidents/${incidentId}/replay`, { key: boot.key, body: { requests_per_minute: 60 } });
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, 'plan_limit');
  });

  it('can be given by the operator API, and an unknown plan is refused with 400', async () => {
    const org = await call(t.app, 'POST', '/admin/v1/organizations', { key: 'test-admin-token-0123456789', body: { name: 'Ops', plan: 'self_hosted' } });
    assert.equal(org.status, 201, JSON.stringify(org.json));
    assert.equal(org.json.data.plan, 'self_hosted');
    const bad = await call(t.app, 'POST', '/admin/v1/organizations', { key: 'test-admin-token-0123456789', body: { name: 'Ops', plan: 'unlimited' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, 'bad_request');
  });
});
