import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { seedOrg, type Seeded } from '../helpers/app.ts';
import { horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { insertCaptures, insertEndpoint, insertForwardDestination } from '../helpers/fixtures.ts';

const LONG = { timeout: 20_000 };

/** Issue 28 item 5: the requests list shows each capture's delivery status and filters on it. */
describe("dashboard: a capture's delivery status", () => {
  const t = useDashboard();
  let s: Seeded;
  before(async () => {
    s = await seedOrg(t.db);
  });

  it('shows delivered, retrying and failed at a glance, and filters the list by it', async () => {
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'triage' });
    const fd = await insertForwardDestination(t.db, ep, { url: 'https://example.com/hook' });
    const [ok, retrying, failed] = await insertCaptures(t.db, ep, [{ path: '/ok' }, { path: '/retrying' }, { path: '/failed' }]);
    // outcomes as the worker records them
    const set = (id: string, status: string, attempts: number) =>
      t.db.query(`update deliveries set status = $1, attempt_count = $2 where request_id = $3::uuid and forward_destination_id = $4::uuid`, [status, attempts, id, fd.id]);
    await set(ok.id, 'succeeded', 1);
    await set(retrying.id, 'pending', 2);
    await set(failed.id, 'dead', 8);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}`);
    const badge = (id: string) => page.locator(`a.req-row[data-id="${id}"] .badge.delivery`);
    await badge(failed.id).waitFor(LONG);
    assert.equal(await badge(ok.id).textContent(), 'delivered');
    assert.equal(await badge(retrying.id).textContent(), 'retrying');
    assert.equal(await badge(failed.id).textContent(), 'failed');
    assert.equal(await badge(failed.id).getAttribute('title'), '1 destination: 1 failed');

    await page.getByText('Search and filter').click();
    await page.getByLabel('Delivery').selectOption('failed');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(/\?delivery_status=failed$/);
    await page.locator('#tail-state', { hasText: 'live' }).waitFor(LONG);
    assert.deepEqual(await page.locator('a.req-row').evaluateAll((els) => els.map((e) => e.getAttribute('data-id'))), [failed.id]);
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
