import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, seedOrg } from '../helpers/app.ts';
import { useDashboard } from '../helpers/browser.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';

/** The subscriptions and usage view in a real browser (Debian's chromium) against the real API on a real port. */
describe('dashboard: subscriptions and usage', () => {
  const t = useDashboard();

  it('serves its script, which never renders API text as HTML', async () => {
    const js = await call(t.app, 'GET', '/dashboard/subscriptions.js');
    assert.equal(js.status, 200);
    assert.match(js.res.headers['content-type'] as string, /^text\/javascript/);
    assert.doesNotMatch(js.res.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it('shows usage against the plan, creates a subscription showing its secret once, and deletes it', async () => {
    const s = await seedOrg(t.db, { plan: 'starter' });
    const endpoint = await insertEndpoint(t.db, s.org.id, { name: 'Stripe' });
    await insertCaptures(t.db, endpoint, [{ body: 'abc' }, { body: 'de' }]);
    const page = await t.browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('dialog', (d) => void d.accept());
    await page.goto(t.base + '/');
    await page.fill('#key', s.key);
    await page.click('#signin-form button');
    await page.click('#nav-subscriptions');
    assert.equal(await page.locator('#app').isHidden(), true, 'the endpoints view is hidden');
    await page.locator('#usage tr', { hasText: /^Captures/ }).waitFor();
    assert.match(await page.locator('#usage tr', { hasText: /^Captures/ }).innerText(), /Captures\s+2\s+0/);
    assert.match(await page.locator('#usage tr', { hasText: 'Endpoints' }).innerText(), /1 of 50/);

    await page.locator('#sub-endpoint option', { hasText: 'Stripe' }).waitFor({ state: 'attached' });
    await page.fill('#sub-url', 'https://hooks.example.com/<b>zap</b>');
    await page.check('#sub-events input[value="request.captured"]');
    await page.check('#sub-events input[value="incident.opened"]');
    await page.selectOption('#sub-endpoint', endpoint.id);
    await page.click('#new-subscription button');
    await page.locator('#sub-secret-box').waitFor();
    const secret = await page.locator('#sub-secret').innerText();
    assert.match(secret, /^whsec_/);
    const listed = (await call(t.app, 'GET', '/v1/subscriptions', { key: s.key })).json.data.data;
    assert.equal(listed.length, 1);
    assert.deepEqual(listed[0].event_types, ['request.captured', 'incident.opened']);
    assert.equal(listed[0].endpoint_id, endpoint.id);
    const row = page.locator(`#sub-list tr[data-id="${listed[0].id}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), /https:\/\/hooks\.example\.com\/<b>zap<\/b>/, 'markup in the URL stays text');

    // a refused subscription shows the API's message
    await page.fill('#sub-url', 'http://not-https.example.com');
    await page.check('#sub-events input[value="incident.opened"]');
    await page.click('#new-subscription button');
    await page.locator('#sub-error', { hasText: 'https' }).waitFor();

    await row.locator('button[data-action="delete"]').click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await call(t.app, 'GET', '/v1/subscriptions', { key: s.key })).json.data.meta.count, 0);

    // the other views hide this one
    await page.click('#nav-incidents');
    assert.equal(await page.locator('#subscriptions').isHidden(), true);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
