import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { call, seedOrg } from '../helpers/app.ts';

const LONG = { timeout: 20_000 };

// The endpoint Settings tab's "Ingest response" form: set a custom answer,
// see the API's refusal of a hop-by-hop header, then go back to the default.
describe('dashboard: an endpoint\'s custom ingest response', () => {
  const t = useDashboard();

  it('sets, refuses and clears the custom answer through the API', async () => {
    const s = await seedOrg(t.db);
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'hooks' } })).json.data;
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}/settings`);
    await page.getByRole('heading', { level: 2, name: 'Ingest response' }).waitFor(LONG);
    await page.getByLabel('Answer captures with a custom response').check();
    await page.getByLabel('Status').fill('503');
    await page.getByLabel('Headers (one per line, Header: value)').fill('Retry-After: 120\nConnection: close');
    await page.getByLabel('Body (optional)').fill('down');
    await page.getByRole('button', { name: 'Save response' }).click();
    await page.locator('#response-error').waitFor(LONG);
    await expectText(page.locator('#response-error'), /hop-by-hop/);
    assert.equal((await call(t.app, 'GET', `/v1/endpoints/${ep.id}`, { key: s.key })).json.data.response, null, 'nothing stored');

    await page.getByLabel('Headers (one per line, Header: value)').fill('Retry-After: 120');
    await page.getByRole('button', { name: 'Save response' }).click();
    await page.getByText('Saved.').waitFor(LONG);
    assert.deepEqual((await call(t.app, 'GET', `/v1/endpoints/${ep.id}`, { key: s.key })).json.data.response, { status: 503, headers: { 'Retry-After': '120' }, body: 'down' });
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.equal(await horizontalOverflow(page), 0);

    await page.getByLabel('Answer captures with a custom response').uncheck();
    await page.getByRole('button', { name: 'Save response' }).click();
    await page.getByText('Saved.').waitFor(LONG);
    const deadline = Date.now() + 20_000;
    let response: unknown = 'unset';
    while (Date.now() < deadline) {
      response = (await call(t.app, 'GET', `/v1/endpoints/${ep.id}`, { key: s.key })).json.data.response;
      if (response === null) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(response, null);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
