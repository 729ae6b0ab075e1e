import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';
import { rollupUsage } from '../../src/usage/rollup.ts';
import { billingPeriods, getUsage } from '../../src/usage/usage.ts';
import { addMemberWithKey, call, seedOrg, useTestApp } from '../helpers/app.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';
import type { Receiver } from '../helpers/https.ts';
import { startReceiver } from '../helpers/https.ts';
import { startTestWorker, waitForStatus } from '../delivery/helpers.ts';
import { idAt } from '../requests/fixtures.ts';

const DAY = 86_400_000;

describe('organization usage', () => {
  const t = useTestApp();
  let worker: DeliveryWorker | undefined;
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await worker?.stop(1000);
    await receiver?.close();
    worker = receiver = undefined;
  });

  it('counts what was captured, forwarded and replayed this month, and the same once the days are rolled up', async () => {
    const s = await seedOrg(t.db, { plan: 'starter' });
    const other = await seedOrg(t.db);
    // 6 forwards (one per capture, no retries): the 2nd and 4th are refused; then one replay succeeds
    receiver = await startReceiver({ reply: (_r, i) => ({ status: i === 1 || i === 3 ? 400 : 200 }) });
    const endpoint = await insertEndpoint(t.db, s.org.id);
    await insertForwardDestination(t.db, endpoint, { url: receiver.url, retryEnabled: false });
    const bodies = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];
    const captures = await insertCaptures(t.db, endpoint, bodies.map((body) => ({ body })));
    await insertCaptures(t.db, await insertEndpoint(t.db, other.org.id), [{ body: 'not ours' }]);
    // a capture of last month: the previous period
    const { previous } = billingPeriods(Date.now());
    await insertCaptures(t.db, endpoint, [{ id: idAt(previous[0] + DAY), body: '1234567' }]);
    worker = await startTestWorker(t.db);
    await waitForStatus(t.db, ['succeeded', 'failed'], 6);
    assert.equal((await call(t.app, 'POST', `/v1/requests/${captures[0].id}/replay`, { key: s.key })).status, 202);
    await waitForStatus(t.db, ['succeeded', 'failed'], 7);

    const expected = {
      captures: 5,
      bytes_captured: 15,
      forwards: { attempted: 7, succeeded: 5, failed: 2 },
      replayed: 1,
    };
    const r = await call(t.app, 'GET', '/v1/usage', { key: s.key });
    assert.equal(r.status, 200);
    const u = r.json.data;
    assert.equal(u.plan, 'starter');
    const { start: _a, end: _b, ...current } = u.current_period;
    // per day: every day of the month so far, oldest first, today holding it all
    const today = new Date().toISOString().slice(0, 10);
    assert.equal(u.days.length, new Date().getUTCDate());
    assert.equal(u.days[0].day, today.slice(0, 8) + '01');
    assert.deepEqual(u.days.at(-1), { day: today, ...expected });
    assert.equal(u.days.reduce((n: number, d: { captures: number }) => n + d.captures, 0), 5);
    // the previous month's capture was forwarded this month: its attempt counts now
    assert.deepEqual(current, expected);
    assert.equal(u.previous_period.captures, 1);
    assert.equal(u.previous_period.bytes_captured, 7);
    assert.equal(u.current_period.start, new Date(billingPeriods(Date.now()).current[0]).toISOString());
    assert.deepEqual(u.limits.endpoints, { used: 1, limit: t.config.plans.starter.max_endpoints });
    assert.deepEqual(u.limits.production_agents, { used: 0, limit: t.config.plans.starter.max_agents });
    assert.equal(u.storage.retention_days, 30);

    // roll every day up to today, as a later run would: the figures do not move
    const rolled: string[] = [];
    for (let more = await rollupUsage(t.db, Date.now() + 2 * DAY); more && more.length > 0; more = await rollupUsage(t.db, Date.now() + 2 * DAY)) rolled.push(...more);
    assert.ok(rolled.includes(new Date().toISOString().slice(0, 10)));
    assert.ok(rolled.includes(new Date(previous[0] + DAY).toISOString().slice(0, 10)));
    const after = await getUsage(t.db, { id: s.org.id, plan: 'starter' }, t.config.plans.starter);
    const { start: _c, end: _d, ...currentAfter } = after.current_period;
    assert.deepEqual(currentAfter, expected);
    assert.deepEqual(after.days, u.days, 'rolled-up days answer the same per-day figures');
    assert.equal(after.previous_period.captures, 1);
    assert.equal((await t.db.query(`select 1 from usage_daily where organization_id = $1::uuid`, [other.org.id])).rows.length, 1, 'every organization is rolled up');
    // rolling up again adds nothing
    assert.deepEqual(await rollupUsage(t.db, Date.now() + 2 * DAY), []);
  });

  it('needs usage:read', async () => {
    const s = await seedOrg(t.db);
    const without = await addMemberWithKey(t.db, s.org.id, 'viewer', ['endpoints:read']);
    const r = await call(t.app, 'GET', '/v1/usage', { key: without.key });
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, 'forbidden');
    const reader = await addMemberWithKey(t.db, s.org.id, 'viewer', ['usage:read']);
    assert.equal((await call(t.app, 'GET', '/v1/usage', { key: reader.key })).status, 200);
    assert.equal((await call(t.app, 'GET', '/v1/usage')).status, 401);
  });
});
