import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, seedOrg } from '../helpers/app.ts';
import { expectText, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { insertCaptures } from '../helpers/fixtures.ts';

const LONG = { timeout: 20_000 };

const CODE = `function handler(request, context) {
  console.log('amount', request.body.amount);
  return { ...request, path: '/billing', headers: { ...request.headers, 'x-added': 'yes' }, body: { cents: request.body.amount * 100 } };
}`;

// Issue 27 in the dashboard: the code editor on a destination's settings,
// the API's compile error beside it, a test run against a capture, clearing it.
describe('dashboard: transformations', () => {
  const t = useDashboard();

  it('saves code, shows the compile error of bad code, tests it against a capture, and clears it', async () => {
    const s = await seedOrg(t.db);
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'shop' } })).json.data;
    // captured before the destination exists: nothing is queued for delivery
    await insertCaptures(t.db, ep, [{ path: '/stripe', body: JSON.stringify({ amount: 20 }) }]);
    const created = await call(t.app, 'POST', '/v1/destinations', { key: s.key, body: { name: 'billing', url: 'https://billing.example.com/in', endpoint_id: ep.id } });
    assert.equal(created.status, 201);
    const destination = async () => (await call(t.app, 'GET', `/v1/endpoints/${ep.id}/destinations`, { key: s.key })).json.data.data[0];

    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}/destinations`);
    await page.getByRole('button', { name: 'Settings of billing' }).click(LONG);
    const form = page.getByRole('form', { name: 'Settings of billing' });
    const code = form.getByLabel('Code (JavaScript)');

    // code that does not compile: the API's 400 with line and column, beside the editor; nothing stored
    await code.fill('function handler(request) {\n  return request *;\n}');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expectText(form.locator('.transformation [role="alert"]'), /does not compile at line 2, column \d+/);
    assert.equal(await code.getAttribute('aria-invalid'), 'true');
    assert.equal((await destination()).transformation, null);

    // test the good code against the newest capture: the transformed request beside the original
    await code.fill(CODE);
    await form.getByText('Test the code against a recent capture').click();
    await form.getByLabel('Capture', { exact: true }).waitFor(LONG);
    await form.getByRole('button', { name: 'Run the code on it' }).click();
    const transformed = form.getByRole('region', { name: 'Transformed request' });
    await expectText(transformed.locator('[data-field="body"]'), /"cents": 2000/);
    await expectText(transformed.locator('[data-field="path"]'), '/billing');
    await expectText(transformed, /x-added\s+yes/);
    await expectText(form.getByRole('region', { name: 'Original request' }).locator('[data-field="body"]'), /"amount": 20/);
    await expectText(form.locator('[data-transform-logs]'), 'amount 20');
    await expectText(form.locator('[data-transform-stats]'), /^Ran in [\d.]+ ms\.$/);
    assert.deepEqual(await seriousA11yViolations(page), []);

    // save it: stored as typed, and the destination says it is transformed
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.waitFor({ state: 'detached', ...LONG });
    assert.equal((await destination()).transformation?.code, CODE);
    await page.locator('.fd .badge', { hasText: 'transformed' }).waitFor(LONG);

    // cleared: transformation null
    await page.getByRole('button', { name: 'Settings of billing' }).click();
    assert.equal(await code.inputValue(), CODE);
    await code.fill('');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.waitFor({ state: 'detached', ...LONG });
    assert.equal((await destination()).transformation, null);
    await page.locator('.fd .badge', { hasText: 'transformed' }).waitFor({ state: 'detached', ...LONG });

    assert.deepEqual(errors, []);
    await page.close();
  });
});
