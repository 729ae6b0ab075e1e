import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { call, seedOrg } from '../helpers/app.ts';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { seedIncident } from '../incidents/helpers.ts';

const MARKUP = '<img src=x onerror=alert(1)>';

/** The incidents pages in a real browser (Debian's chromium) against the real API on a real port. */
describe('dashboard: incidents', () => {
  const t = useDashboard();

  const batchesOf = async (incidentId: string) =>
    (await t.db.query<{ status: string; queued_count: number }>(`select status, queued_count from replay_batches where incident_id = $1::uuid`, [incidentId])).rows;

  async function openIncident(page: Page, name: string) {
    await page.getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: new RegExp('^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + ' · ') }).waitFor();
  }

  it('serves its module, which never renders API text as HTML', async () => {
    const js = await call(t.app, 'GET', '/dashboard/pages/incidents.js');
    assert.equal(js.status, 200);
    assert.match(js.res.headers['content-type'] as string, /^text\/javascript/);
    assert.doesNotMatch(js.res.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|dangerouslySetInnerHTML/);
  });

  it('lists incidents, shows one with its timeline and failures, changes its status, queues a replay with an estimated duration, follows the batch, and takes notes', async () => {
    const s = await seedOrg(t.db);
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 3 });
    // a destination name that is markup must stay text
    await t.db.query(`update incidents set destination_name = $2 where id = $1::uuid`, [incidentId, MARKUP]);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Incidents' }).click();
    await page.getByRole('heading', { level: 1, name: 'Incidents' }).waitFor();
    const row = page.locator(`tr[data-id="${incidentId}"]`);
    await row.waitFor();
    await expectText(row, /open\s+<img src=x onerror=alert\(1\)>\s+The destination answers 5xx server errors \(503\)\.\s+3\s+1/);
    assert.equal(await page.locator('main img').count(), 0, 'a name is text, never markup');
    assert.deepEqual(await seriousA11yViolations(page), []);

    await openIncident(page, MARKUP);
    assert.equal(new URL(page.url()).pathname, `/incidents/${incidentId}`, 'the incident has its own URL');
    await expectText(page.getByRole('heading', { level: 1 }), `${MARKUP} · open`);
    assert.equal(await page.locator('#inc-failures tr').count(), 4, 'a header and three failures');
    await expectText(page.locator('#inc-timeline'), /system: Incident opened/);
    await expectText(page.locator('#inc-cause'), /5xx server errors \(503\)/);
    assert.equal(await page.locator('main img').count(), 0);
    assert.deepEqual(await seriousA11yViolations(page), []);

    await page.getByRole('button', { name: 'Mark investigating' }).click();
    await page.getByRole('heading', { level: 1, name: `${MARKUP} · investigating` }).waitFor();
    assert.equal((await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key })).json.data.status, 'investigating');
    await page.locator('#inc-timeline', { hasText: 'Status changed from open to investigating' }).waitFor();

    const rate = page.getByLabel('Requests per minute');
    await rate.fill('2');
    await expectText(page.locator('#inc-estimate'), '3 failures at 2/min: about 2 min.');
    await rate.fill('0');
    await expectText(page.locator('#inc-estimate'), /whole number from 1 to 6000/);
    await rate.fill('60');
    await expectText(page.locator('#inc-estimate'), '3 failures at 60/min: about 3 s.');
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.locator('#inc-batch', { hasText: '3 queued at 60/min' }).waitFor();
    assert.deepEqual(await batchesOf(incidentId), [{ status: 'running', queued_count: 3 }]);
    await page.locator('#inc-estimate', { hasText: 'Nothing left to replay' }).waitFor();

    // the batch's live progress (no delivery worker runs in this app: it stays where it is until changed)
    const batch = page.locator('.batch');
    await batch.getByText('running', { exact: true }).waitFor();
    await expectText(batch, /0 of 3 sent[\s\S]*0 delivered · 0 failed · 3 remaining · 60\/min/);
    assert.deepEqual(await seriousA11yViolations(page), []);
    await batch.getByRole('button', { name: 'Pause' }).click();
    await batch.getByText('paused', { exact: true }).waitFor();
    assert.deepEqual(await batchesOf(incidentId), [{ status: 'paused', queued_count: 3 }]);
    await batch.getByText(/Paused: paused by member/).waitFor();
    await batch.getByRole('button', { name: 'Resume' }).click();
    await batch.getByText('running', { exact: true }).waitFor();
    assert.deepEqual(await batchesOf(incidentId), [{ status: 'running', queued_count: 3 }]);
    await batch.getByRole('button', { name: 'Cancel batch' }).click();
    await batch.getByRole('button', { name: 'Cancel the batch' }).click();
    await batch.getByText('cancelled', { exact: true }).waitFor();
    assert.deepEqual(await batchesOf(incidentId), [{ status: 'cancelled', queued_count: 3 }]);
    // cancelled before anything was sent: the failures are unreplayed again
    await page.locator('#inc-estimate', { hasText: '3 failures at 60/min' }).waitFor();

    await page.getByLabel('Add a note').fill('Called <b>them</b>');
    await page.getByRole('button', { name: 'Add note' }).click();
    await page.locator('#inc-timeline', { hasText: 'Called <b>them</b>' }).waitFor();
    assert.equal(await page.locator('#inc-timeline b').count(), 0, 'a note is text, never markup');
    const notes = await t.db.query<{ body: string; is_system: boolean }>(`select body, is_system from incident_updates where incident_id = $1::uuid and not is_system`, [incidentId]);
    assert.deepEqual(notes.rows, [{ body: 'Called <b>them</b>', is_system: false }]);
    await expectText(page.locator('#inc-timeline'), /you: Called <b>them<\/b>/);

    // a reload keeps the page and finds the batch again
    await page.reload();
    await page.locator('.batch').getByText('cancelled', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Resolve' }).click();
    await page.getByRole('heading', { level: 1, name: `${MARKUP} · resolved` }).waitFor();
    assert.equal((await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key })).json.data.status, 'resolved');
    await page.getByRole('button', { name: 'Reopen' }).waitFor();
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('refuses more than 12 hours before asking, shows the API\'s 400 at the replay form, and the free plan\'s refusal', async () => {
    const s = await seedOrg(t.db);
    const big = await seedIncident(t.db, s.org.id, { n: 721 });
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/incidents/${big.incidentId}`);
    await page.getByLabel('Requests per minute').fill('1');
    await expectText(page.locator('#inc-estimate'), /721 failures at 1\/min: about 12 h 1 min\. That is over the 12-hour limit: choose at least 2 per minute\./);
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.locator('#inc-replay-error', { hasText: 'over the 12-hour limit' }).waitFor();
    assert.deepEqual(await batchesOf(big.incidentId), [], 'nothing was asked of the API');
    await page.getByLabel('Requests per minute').fill('2');
    assert.equal(await page.locator('#inc-replay-error').count(), 0, 'the refusal goes once the rate is changed');

    // the API's own 400: everything was replayed elsewhere after this page loaded
    const other = await call(t.app, 'POST', `/v1/incidents/${big.incidentId}/replay`, { key: s.key, body: { requests_per_minute: 60 } });
    assert.equal(other.status, 200);
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.locator('#inc-replay-error', { hasText: 'no unreplayed failures left' }).waitFor();
    assert.equal((await batchesOf(big.incidentId)).length, 1);
    assert.deepEqual(await seriousA11yViolations(page), []);
    await page.close();

    const free = await seedOrg(t.db, { plan: 'free' });
    const small = await seedIncident(t.db, free.org.id, { n: 2 });
    const p2 = await openDashboardPage(t.browser);
    await signIn(p2.page, t.base, free.key, `/incidents/${small.incidentId}`);
    await p2.page.getByText('Incident replay is not included in the free plan').waitFor();
    await p2.page.getByRole('button', { name: 'Replay', exact: true }).click();
    await p2.page.locator('#inc-replay-error', { hasText: 'needs the Starter plan' }).waitFor();
    assert.deepEqual(await batchesOf(small.incidentId), []);
    assert.deepEqual([...errors, ...p2.errors], []);
    await p2.page.close();
  });

  it('hides what a viewer may not do', async () => {
    const s = await seedOrg(t.db, { role: 'viewer' });
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 1 });
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/incidents/${incidentId}`);
    await page.getByRole('heading', { level: 1, name: /· open$/ }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Resolve' }).count(), 0);
    assert.equal(await page.getByLabel('Add a note').count(), 0);
    await page.getByText('Replaying needs a key that may replay incidents').waitFor();
    assert.deepEqual(errors, []);
    await page.close();

  });

  it('filters by status in the URL, pages with Older/Newest, and is operable by keyboard', async () => {
    const s = await seedOrg(t.db);
    const ids: string[] = [];
    for (let i = 0; i < 27; i++) ids.push((await seedIncident(t.db, s.org.id, { n: 1 })).incidentId);
    const resolved = ids[0];
    await call(t.app, 'PATCH', `/v1/incidents/${resolved}`, { key: s.key, body: { status: 'resolved' } });
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/incidents');
    await page.locator('tbody tr').first().waitFor();
    assert.equal(await page.locator('tbody tr').count(), 25, 'open ones, newest first, 25 a page');
    assert.equal(await page.locator(`tr[data-id="${resolved}"]`).count(), 0);
    await page.getByRole('link', { name: 'Older' }).click();
    await page.locator(`tr[data-id="${ids[1]}"]`).waitFor();
    assert.equal(await page.locator('tbody tr').count(), 0 + 1);
    assert.match(new URL(page.url()).search, /before=/);
    await page.getByRole('link', { name: 'Newest' }).click();
    await page.locator(`tr[data-id="${ids[26]}"]`).waitFor();

    // keyboard: the filter, then a row's link
    const filter = page.getByLabel('Show');
    await filter.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await page.waitForURL(/\?status=resolved$/);
    await page.locator(`tr[data-id="${resolved}"]`).waitFor();
    assert.equal(await page.locator('tbody tr').count(), 1);
    await page.reload();
    await page.locator(`tr[data-id="${resolved}"]`).waitFor();
    assert.equal(await page.getByLabel('Show').inputValue(), 'resolved', 'the filter is kept in the URL');
    await page.locator(`tr[data-id="${resolved}"] a`).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/incidents/${resolved}$`));
    await page.getByRole('button', { name: 'Reopen' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: /· open$/ }).waitFor();
    const rate = page.getByLabel('Requests per minute');
    await rate.focus();
    await rate.fill('30');
    await page.keyboard.press('Enter'); // submits the replay form
    await page.locator('#inc-batch', { hasText: '1 queued at 30/min' }).waitFor();
    assert.deepEqual(await batchesOf(resolved), [{ status: 'running', queued_count: 1 }]);
    await page.getByLabel('Add a note').focus();
    await page.keyboard.type('by keyboard');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.locator('#inc-timeline', { hasText: 'by keyboard' }).waitFor();
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    assert.notEqual(outline, 'none', 'the focused control shows a ring');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('links a recurring incident to the previous one, and opening that shows its own page', async () => {
    const s = await seedOrg(t.db);
    const first = await seedIncident(t.db, s.org.id, { n: 1 });
    const second = await seedIncident(t.db, s.org.id, { n: 2 });
    await t.db.query(`update incidents set destination_name = 'first' where id = $1::uuid`, [first.incidentId]);
    await t.db.query(`update incidents set destination_name = 'second', is_recurring = true, previous_incident_id = $2::uuid where id = $1::uuid`, [
      second.incidentId,
      first.incidentId,
    ]);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/incidents/${second.incidentId}`);
    await page.getByRole('heading', { level: 1, name: 'second · open' }).waitFor();
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.locator('#inc-batch', { hasText: '2 queued' }).waitFor();
    const link = page.getByRole('link', { name: 'the previous incident' });
    assert.equal(await link.getAttribute('href'), `/incidents/${first.incidentId}`);
    await link.click();
    await page.getByRole('heading', { level: 1, name: 'first · open' }).waitFor();
    assert.equal(await page.locator('#inc-batch').count(), 0, "nothing of the other incident's replay carries over");
    assert.equal(await page.locator('.batch').count(), 0);
    await page.locator('#inc-estimate', { hasText: '1 failure at 60/min' }).waitFor();
    await page.goBack();
    await page.getByRole('heading', { level: 1, name: 'second · open' }).waitFor();
    await page.locator('.batch').getByText('running', { exact: true }).waitFor();
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('fits a 360 px screen without sideways scrolling, list and detail', async () => {
    const s = await seedOrg(t.db);
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 2, url: 'https://a-very-long-host-name-for-a-small-screen.example.com/with/a/long/path/to/the/hook' });
    const { page, errors } = await openDashboardPage(t.browser, { width: 360, height: 740 });
    await signIn(page, t.base, s.key, '/incidents');
    await page.locator(`tr[data-id="${incidentId}"]`).waitFor();
    assert.equal(await horizontalOverflow(page), 0);
    await page.goto(`${t.base}/incidents/${incidentId}`);
    await page.locator('#inc-failures').waitFor();
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.locator('.batch').getByText('running', { exact: true }).waitFor();
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
