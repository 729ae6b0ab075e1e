import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expectText, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { call, seedOrg } from '../helpers/app.ts';
import { insertCaptures } from '../helpers/fixtures.ts';

const LONG = { timeout: 20_000 };

// Issue 25 in the dashboard: the provider picker with a masked secret on the
// endpoint's settings, a badge with the reason on each capture, the filter.
describe('dashboard: signature verification', () => {
  const t = useDashboard();

  it('sets verification with a masked secret that the page never shows again', async () => {
    const s = await seedOrg(t.db);
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'stripe' } })).json.data;
    const secret = 'whsec_dashboardSecretValue0123456789';
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}/settings`);
    await page.getByRole('heading', { level: 2, name: 'Signature verification' }).waitFor(LONG);
    await page.getByLabel('Provider').selectOption('stripe');
    const field = page.getByLabel('Signing secret');
    assert.equal(await field.getAttribute('type'), 'password');
    await field.fill(secret);
    await page.getByLabel(/Enforce: answer 401/).check();
    assert.equal(await page.getByLabel('Provider').inputValue(), 'stripe', 'the form still holds the provider when saved');
    const [patched] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().endsWith(`/v1/endpoints/${ep.id}`), LONG),
      page.getByRole('button', { name: 'Save verification' }).click(),
    ]);
    const sent = patched.request().postDataJSON();
    assert.deepEqual([sent.verification?.provider, sent.verification?.enforce, sent.verification?.secret], ['stripe', true, secret], 'what the page sent');
    assert.equal(patched.status(), 200);
    await page.getByText('Saved.').waitFor(LONG);
    const v = (await call(t.app, 'GET', `/v1/endpoints/${ep.id}`, { key: s.key })).json.data.verification;
    assert.deepEqual([v.provider, v.enforce, v.secret_last4], ['stripe', true, '6789']);
    await expectText(page.locator('#verification-secret-hint'), /…6789/);
    assert.equal(await field.inputValue(), '', 'the typed secret is not kept in the form');
    assert.ok(!(await page.content()).includes(secret), 'the secret is nowhere in the page');
    await page.reload();
    await page.getByRole('heading', { level: 2, name: 'Signature verification' }).waitFor(LONG);
    assert.ok(!(await page.content()).includes(secret));
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows a badge with the reason on each capture, and filters by it', async () => {
    const s = await seedOrg(t.db);
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'hooks', verification: { provider: 'github', secret: 'a-github-secret' } } })).json.data;
    await insertCaptures(t.db, ep, [
      { path: '/good', verification_status: 'verified' },
      { path: '/bad', verification_status: 'failed', verification_reason: 'bad_signature', rejected: true },
    ]);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}`);
    const good = page.locator('.req-row', { hasText: '/good' });
    const bad = page.locator('.req-row', { hasText: '/bad' });
    await good.waitFor(LONG);
    await expectText(good.locator('[data-verification]'), /verified/);
    await expectText(bad.locator('[data-verification]'), /rejected: signature does not match/);
    await page.getByText('Search and filter').click();
    await page.getByLabel('Signature').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await good.waitFor({ state: 'detached', ...LONG });
    await bad.waitFor(LONG);
    await bad.click();
    await expectText(page.locator('.req-detail [data-verification]'), /rejected: signature does not match/);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
