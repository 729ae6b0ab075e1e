import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMIN_TOKEN, call, seedOrg } from '../helpers/app.ts';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { tabTo } from '../helpers/dashboard-keyboard.ts';

/** The dashboard's shell in a real browser: sign-in, the layout, a revoked key, small screens. */
describe('dashboard shell', () => {
  const t = useDashboard();

  it('refuses a wrong key on the sign-in page with the API message, and keeps nothing', async () => {
    const { page, errors } = await openDashboardPage(t.browser);
    await page.goto(t.base + '/');
    await page.getByLabel('API key').fill('wr_live_us_not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#signin-error').waitFor();
    await expectText(page.locator('#signin-error'), /key/i);
    assert.equal(await page.evaluate(`localStorage.getItem('weir.key')`), null);
    await expectText(page.locator('main'), /npx weir keys create/, 'the way to a new key is on the page');
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('signs in, names who is signed in, and offers every page in the navigation', async () => {
    const s = await seedOrg(t.db, { email: 'ada@example.com' });
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key);
    await expectText(page.locator('header'), /ada@example\.com \(super_admin\) · Acme · plan starter/);
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const name of ['Endpoints', 'Destinations', 'Incidents', 'Agents', 'Subscriptions', 'Usage', 'API keys', 'Members', 'API reference']) {
      assert.equal(await nav.getByRole('link', { name }).count(), 1, name);
    }
    assert.equal(new URL(page.url()).pathname, '/endpoints', '/ opens the endpoints');
    await page.goto(t.base + '/nowhere-known'.replace('nowhere-known', 'endpoints/x/y/z/w'));
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('returns to sign-in with the reason once the key is revoked', async () => {
    const s = await seedOrg(t.db);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key);
    const revoked = await call(t.app, 'DELETE', `/admin/v1/api-keys/${s.keyId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(revoked.status, 204);
    // revocation reaches the key cache through NOTIFY: wait until the API itself refuses the key
    for (let i = 0; i < 100 && (await call(t.app, 'GET', '/v1/me', { key: s.key })).status !== 401; i++) await new Promise((r) => setTimeout(r, 50));
    await page.reload();
    await page.getByRole('alert').filter({ hasText: 'no longer accepted' }).waitFor();
    assert.equal(await page.getByLabel('API key').count(), 1);
    assert.equal(await page.evaluate(`localStorage.getItem('weir.key')`), null);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('fits a 360 px screen without sideways scrolling, signed out and in', async () => {
    const s = await seedOrg(t.db, { email: 'a-very-long-address-for-a-small-screen@example.com' });
    const { page, errors } = await openDashboardPage(t.browser, { width: 360, height: 740 });
    await page.goto(t.base + '/');
    await page.getByLabel('API key').waitFor();
    assert.equal(await horizontalOverflow(page), 0);
    await signIn(page, t.base, s.key);
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('reaches the skip link and the navigation by keyboard, with a visible focus', async () => {
    const s = await seedOrg(t.db);
    const { page } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key);
    // the page opened after sign-in focuses its heading (Chromium then starts Tab from there): go back up to the skip link
    await page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor();
    await tabTo(page, 'Skip to content', { back: true });
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content');
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    assert.notEqual(outline, 'none', 'the focused control shows a ring');
    await page.close();
  });
});
