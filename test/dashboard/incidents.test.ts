import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, seedOrg } from '../helpers/app.ts';
import { useBrowserApp } from '../helpers/browser.ts';
import { seedIncident } from '../incidents/helpers.ts';

/** The incidents view in a real browser (Debian's chromium) against the real API on a real port. */
describe('dashboard: incidents', () => {
  const { t, browser, base } = useBrowserApp();

  it('serves its script, which never renders API text as HTML', async () => {
    const js = await call(t.app, 'GET', '/dashboard/incidents.js');
    assert.equal(js.status, 200);
    assert.match(js.res.headers['content-type'] as string, /^text\/javascript/);
    assert.doesNotMatch(js.res.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it('lists incidents, shows one with its timeline and failures, changes its status and queues a replay with an estimated duration', async () => {
    const s = await seedOrg(t.db);
    const { incidentId } = await seedIncident(t.db, s.org.id, { n: 3 });
    // a destination name that is markup must stay text
    await t.db.query(`update incidents set destination_name = '<img src=x onerror=alert(1)>'`);
    const page = await browser().newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(base() + '/');
    await page.fill('#key', s.key);
    await page.click('#signin-form button');
    await page.click('#nav-incidents');
    assert.equal(await page.locator('#nav').count(), 1, 'one navigation');
    assert.equal(await page.locator('#incidents').count(), 1, 'one incidents view');
    assert.equal(await page.locator('#app').isHidden(), true, 'the endpoints view is hidden');
    const row = page.locator(`#inc-list tr[data-id="${incidentId}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), /open\s+<img src=x onerror=alert\(1\)>\s+The destination answers 5xx server errors \(503\)\.\s+3\s+1/);

    await row.click();
    await page.locator('#inc-title').waitFor();
    assert.equal(await page.locator('#inc-title').innerText(), '<img src=x onerror=alert(1)> · open');
    assert.equal(await page.locator('#inc-failures tr').count(), 4, 'a header and three failures');
    assert.match(await page.locator('#inc-timeline').innerText(), /system: Incident opened/);

    await page.click('#inc-detail button[data-status="investigating"]');
    await page.locator('#inc-title', { hasText: '· investigating' }).waitFor();
    assert.equal((await call(t.app, 'GET', `/v1/incidents/${incidentId}`, { key: s.key })).json.data.status, 'investigating');
    assert.match(await page.locator('#inc-timeline').innerText(), /Status changed from open to investigating/);

    await page.fill('#inc-rate', '2');
    assert.equal(await page.locator('#inc-estimate').innerText(), '3 failure(s) at 2/min: about 2 min');
    await page.fill('#inc-rate', '0');
    assert.match(await page.locator('#inc-estimate').innerText(), /whole number from 1 to 6000/);
    await page.fill('#inc-rate', '60');
    assert.equal(await page.locator('#inc-estimate').innerText(), '3 failure(s) at 60/min: about 3 s');
    await page.click('#inc-replay button');
    await page.locator('#inc-batch', { hasText: '3 queued at 60/min' }).waitFor();
    const { rows } = await t.db.query<{ queued_count: number }>(`select queued_count from replay_batches`);
    assert.deepEqual(rows, [{ queued_count: 3 }]);
    assert.equal(await page.locator('#inc-estimate').innerText(), 'nothing left to replay');

    await page.fill('#inc-note-text', 'Called <b>them</b>');
    await page.click('#inc-note button');
    await page.locator('#inc-timeline', { hasText: 'Called <b>them</b>' }).waitFor();
    assert.deepEqual(errors, []);
    await page.close();
  });
});
