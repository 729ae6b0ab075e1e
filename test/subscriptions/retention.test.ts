import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_PLANS } from '../../src/orgs/plans.ts';
import { insertEvents } from '../../src/subscriptions/emit.ts';
import { sweepSubscriptionEvents } from '../../src/subscriptions/retention.ts';
import { createSubscription } from '../../src/subscriptions/subscriptions.ts';
import { seedOrg, useTestApp } from '../helpers/app.ts';

describe('subscription event retention', () => {
  const t = useTestApp();

  /** One event per status, all created `ageDays` ago, for a new subscription of the organization. */
  async function eventsOf(orgId: string, ageDays: number): Promise<Map<string, string>> {
    const r = await createSubscription(t.db, { organizationId: orgId, targetUrl: 'https://example.com/hook', eventTypes: ['incident.opened'], createdBy: null });
    assert.ok(r.ok);
    const statuses = ['succeeded', 'failed', 'dead', 'pending', 'in_flight'];
    const event = { organizationId: orgId, type: 'incident.opened' as const, data: { object: {} } };
    await t.db.transaction((tx) => insertEvents(tx, statuses.map(() => ({ subscriptionId: r.subscription.id, event }))));
    const { rows } = await t.db.query<{ id: string }>(`select id from subscription_events where subscription_id = $1::uuid order by seq`, [r.subscription.id]);
    const byStatus = new Map<string, string>();
    for (const [i, row] of rows.entries()) {
      await t.db.query(`update subscription_events set status = $2, created_at = now() - $3 * interval '1 day' where id = $1::uuid`, [row.id, statuses[i], ageDays]);
      byStatus.set(statuses[i], row.id);
    }
    return byStatus;
  }

  const left = async (ids: Iterable<string>) =>
    (await t.db.query<{ id: string }>(`select id from subscription_events where id = any($1::uuid[])`, [[...ids]])).rows.map((r) => r.id).sort();

  it("deletes finished events past the organization's plan retention, and never a pending or in-flight one", async () => {
    const free = await seedOrg(t.db, { plan: 'free' });
    const business = await seedOrg(t.db, { plan: 'business' });
    const old = await eventsOf(free.org.id, DEFAULT_PLANS.free.retention_days + 1);
    const recent = await eventsOf(free.org.id, DEFAULT_PLANS.free.retention_days - 1);
    const kept = await eventsOf(business.org.id, DEFAULT_PLANS.free.retention_days + 1);
    const deleted = await sweepSubscriptionEvents(t.db, DEFAULT_PLANS, Date.now());
    assert.equal(deleted, 3);
    assert.deepEqual(await left(old.values()), [old.get('pending')!, old.get('in_flight')!].sort());
    assert.equal((await left(recent.values())).length, 5);
    assert.equal((await left(kept.values())).length, 5);
    assert.equal(await sweepSubscriptionEvents(t.db, DEFAULT_PLANS, Date.now()), 0);
  });
});
