import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addMemberWithKey, call, seedOrg } from '../helpers/app.ts';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';

/** The usage page in a real browser against the real API: figures, limits, per day, all as text. */
describe('dashboard: usage', () => {
  const t = useDashboard();

  it('shows this month against the plan: totals, limits with their figures, per day, retention and replay', async () => {
    const s = await seedOrg(t.db, { plan: 'starter' });
    const endpoint = await insertEndpoint(t.db, s.org.id, { name: 'Stripe' });
    await insertCaptures(t.db, endpoint, [{ body: 'abc' }, { body: 'de' }]);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/usage');
    const totals = page.locator('#usage-totals-table');
    await totals.waitFor();
    // the old view's figures: captures this month and last, endpoints against the plan
    await expectText(totals.getByRole('row', { name: /^Captures/ }), /Captures\s+2\s+0/);
    await expectText(totals.getByRole('row', { name: /Bytes captured/ }), /5 B\s+0 B/);
    const limits = page.getByRole('region', { name: 'Plan limits' });
    await expectText(limits, /Endpoints\s+1 of 50 endpoints used \(2 %\)/);
    await expectText(limits, /Production agents\s+0 of 3 agents used \(0 %\)/);
    await expectText(limits, /Retention\s+30 days: 2 captures stored now/);
    await expectText(limits, /Incident replay\s+included in this plan/);
    await expectText(limits, /up to 5 per endpoint/);
    // per day: the chart says its total and peak in words; the table has every day
    const perDay = page.getByRole('region', { name: 'Per day' });
    await expectText(perDay.getByRole('figure').first(), /Captures: 2 this period, most on \w+ \d+ \(2\)/);
    await perDay.getByText("Every day's figures").click();
    const days = perDay.locator('#usage-days-table tbody tr');
    assert.equal(await days.count(), new Date().getUTCDate());
    await expectText(days.first(), /\s2\s+5 B\s+0\s+0\s+0/);
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('says when a limit is reached, and that the free plan has no incident replay, in words', async () => {
    const s = await seedOrg(t.db, { plan: 'free' });
    const max = t.config.plans.free.max_endpoints;
    for (let i = 0; i < max; i++) await insertEndpoint(t.db, s.org.id);
    const { page, errors } = await openDashboardPage(t.browser, { width: 360, height: 740 });
    await signIn(page, t.base, s.key, '/usage');
    const limits = page.getByRole('region', { name: 'Plan limits' });
    await limits.waitFor();
    await expectText(limits, new RegExp(`${max} of ${max} endpoints used \\(100 %\\)`));
    await expectText(limits, /Limit reached: creating another endpoint is refused/);
    await expectText(limits, /Incident replay\s+not included in this plan/);
    // the API agrees: the next endpoint is refused
    const refused = await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'one too many' } });
    assert.equal(refused.json.error.code, 'plan_limit');
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows the API refusal to a key without usage:read where the figures would be', async () => {
    const s = await seedOrg(t.db);
    const narrow = await addMemberWithKey(t.db, s.org.id, 'developer', ['endpoints:read']);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, narrow.key, '/usage');
    const alert = page.getByRole('main').getByRole('alert');
    await alert.waitFor();
    await expectText(alert, /usage:read/);
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('opens the per-day table by keyboard', async () => {
    const s = await seedOrg(t.db);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/usage');
    const summary = page.getByText("Every day's figures");
    await summary.waitFor();
    await summary.focus();
    await page.keyboard.press('Enter');
    await page.locator('#usage-days-table').waitFor();
    assert.equal(await page.locator('#usage-days-table').isVisible(), true);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
