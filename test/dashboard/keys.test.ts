import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { READ_NOTIFY_PRESET, SCOPES } from '../../src/auth/permissions.ts';
import { addMemberWithKey, call, seedOrg } from '../helpers/app.ts';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';

/** A scope's checkbox (its label starts with the scope, then says what it unlocks). */
const scopeBox = (within: Locator | Page, scope: string) => within.getByRole('checkbox', { name: new RegExp(`^${scope} `) });
const checkedScopes = async (within: Locator) => {
  const out: string[] = [];
  for (const s of SCOPES) if (await scopeBox(within, s).isChecked()) out.push(s);
  return out;
};

/** The API keys page in a real browser against the real API. */
describe('dashboard: API keys', () => {
  const t = useDashboard();
  const keys = async (key: string) => (await call(t.app, 'GET', '/v1/api-keys', { key })).json.data.data as Array<Record<string, any>>;

  it('creates a custom key with the Read + Notify preset, shows it once, and the key works with exactly those scopes', async () => {
    const s = await seedOrg(t.db);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/keys');
    const table = page.locator('#keys-table');
    await table.getByRole('row').filter({ hasText: 'this browser' }).waitFor();
    assert.deepEqual(await seriousA11yViolations(page), []);

    const form = page.getByRole('region', { name: 'New key' });
    await form.getByLabel('Name').fill('Zapier <b>notify</b>');
    await form.getByRole('radio', { name: /^Custom scopes/ }).check();
    // every scope of the specification, as a labelled checkbox, grouped
    assert.equal(await form.getByRole('checkbox').count(), SCOPES.length);
    for (const group of ['Endpoints', 'Requests', 'Destinations', 'Subscriptions', 'Incidents', 'Members', 'Usage']) {
      assert.equal(await form.getByRole('group', { name: group, exact: true }).count(), 1, group);
    }
    await scopeBox(form, 'usage:read').check();
    await form.getByRole('button', { name: 'Read + Notify' }).click();
    assert.deepEqual(await checkedScopes(form), [...READ_NOTIFY_PRESET].sort((a, b) => SCOPES.indexOf(a) - SCOPES.indexOf(b)), 'exactly the preset');
    assert.deepEqual(await seriousA11yViolations(page), []);
    await form.getByRole('button', { name: 'Create key' }).click();
    const secret = page.locator('.secret code');
    await secret.waitFor();
    const key = await secret.innerText();
    assert.match(key, /^wr_live_us_/);
    await expectText(page.locator('.secret'), /only this once/);

    const created = (await keys(s.key)).find((k) => k.name === 'Zapier <b>notify</b>');
    assert.ok(created);
    assert.equal(created.access_mode, 'custom');
    assert.deepEqual([...created.scopes].sort(), [...READ_NOTIFY_PRESET].sort());
    const me = await call(t.app, 'GET', '/v1/me', { key });
    assert.equal(me.status, 200);
    assert.equal(me.json.data.api_key.access_mode, 'custom');
    const row = table.getByRole('row').filter({ hasText: 'Zapier <b>notify</b>' });
    await row.waitFor();
    await expectText(row, /Custom: endpoints:read, requests:read/);
    await expectText(row, new RegExp(created.display_prefix));
    assert.equal(await page.locator('main b').count(), 0, 'the name stays text');
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('refuses zero scopes and replay without read in the page, and shows the API refusal (a past expiry) at the form', async () => {
    const s = await seedOrg(t.db);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/keys');
    const form = page.getByRole('region', { name: 'New key' });
    await form.getByLabel('Name').fill('Refused');
    await form.getByRole('radio', { name: /^Custom scopes/ }).check();
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-problem', { hasText: 'A custom-scope key needs at least one scope' }).waitFor();
    assert.deepEqual(await seriousA11yViolations(page), []);
    await scopeBox(form, 'requests:replay').check();
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-problem', { hasText: 'The scope requests:replay requires requests:read.' }).waitFor();
    // the API says the same (the page used its words)
    const api = await call(t.app, 'POST', '/v1/api-keys', { key: s.key, body: { name: 'x', access_mode: 'custom', scopes: ['requests:replay'] } });
    assert.equal(api.status, 400);
    assert.equal(api.json.error.message, 'The scope requests:replay requires requests:read.');
    // fixed: the next refusal is the API's own
    await scopeBox(form, 'requests:read').check();
    await form.getByLabel('Expires (optional)').fill('2020-01-01T12:00');
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-error', { hasText: 'must be in the future' }).waitFor();
    assert.equal(await page.locator('#key-problem').count(), 0);
    assert.equal((await keys(s.key)).length, 1, 'nothing was created');
    // and with a future expiry it goes through
    await form.getByLabel('Expires (optional)').fill('2099-06-01T12:00');
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.locator('.secret code').waitFor();
    const made = (await keys(s.key)).find((k) => k.name === 'Refused');
    assert.ok(made?.expires_at?.startsWith('2099-06-01'));
    assert.deepEqual(made?.scopes, ['requests:read', 'requests:replay']);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('edits a key’s access, revokes another key, creates a key for a member, and refuses a bad edit', async () => {
    const s = await seedOrg(t.db, { email: 'boss@example.com' });
    const dev = await addMemberWithKey(t.db, s.org.id, 'developer', undefined, 'dev@example.com');
    const other = await call(t.app, 'POST', '/v1/api-keys', { key: s.key, body: { name: 'CI', access_mode: 'custom', scopes: ['endpoints:read'] } });
    assert.equal(other.status, 201);
    const old = await call(t.app, 'POST', '/v1/api-keys', { key: s.key, body: { name: 'Old', expires_at: '2099-01-01T00:00:00Z' } });
    await t.db.query(`update api_keys set expires_at = now() - interval '1 day' where id = $1::uuid`, [old.json.data.id]);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/keys');
    const table = page.locator('#keys-table');
    // an expired key says so
    await table.getByRole('row').filter({ has: page.getByRole('cell', { name: 'Old', exact: true }) }).getByText('expired').waitFor();
    // a manager sees every key, with its owner
    const devRow = table.getByRole('row').filter({ hasText: 'dev@example.com' });
    await devRow.waitFor();
    const ci = table.getByRole('row').filter({ has: page.getByRole('cell', { name: 'CI', exact: true }) });
    await expectText(ci, /boss@example\.com \(you\)/);

    await ci.getByRole('button', { name: 'Edit access of CI' }).click();
    const edit = page.getByRole('region', { name: 'Edit access of “CI”' });
    await edit.waitFor();
    assert.deepEqual(await checkedScopes(edit), ['endpoints:read']);
    await scopeBox(edit, 'endpoints:read').uncheck();
    await edit.getByRole('button', { name: 'Save access' }).click();
    await edit.locator('#edit-problem', { hasText: 'at least one scope' }).waitFor();
    assert.deepEqual(await seriousA11yViolations(page), []);
    await scopeBox(edit, 'usage:read').check();
    await scopeBox(edit, 'incidents:write').check();
    await edit.getByRole('button', { name: 'Save access' }).click();
    await edit.waitFor({ state: 'detached' });
    assert.deepEqual((await keys(s.key)).find((k) => k.id === other.json.data.id)?.scopes, ['incidents:write', 'usage:read']);
    await expectText(ci, /Custom: incidents:write, usage:read/);

    // revoke someone else's key: confirmed inline, then listed as revoked, and it stops working
    await devRow.getByRole('button', { name: 'Revoke' }).click();
    await devRow.getByRole('button', { name: 'Revoke key' }).click();
    await devRow.waitFor({ state: 'detached' });
    await page.getByText('Revoked keys (1)').waitFor();
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: dev.key })).status, 401);

    // a key for another member, shown once
    const form = page.getByRole('region', { name: 'New key' });
    const grace = await call(t.app, 'POST', '/v1/members', { key: s.key, body: { email: 'grace@example.com', role: 'viewer' } });
    await page.reload();
    await form.getByRole('combobox', { name: 'Owner' }).selectOption({ label: 'grace@example.com (viewer)' });
    await form.getByLabel('Name').fill('Grace laptop');
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.locator('.secret', { hasText: 'for grace@example.com' }).waitFor();
    const graceKey = (await keys(s.key)).find((k) => k.name === 'Grace laptop');
    assert.equal(graceKey?.member_id, grace.json.data.id);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows a 403 at the action when the role is lowered under an open page, and what a developer or a custom key may see', async () => {
    const s = await seedOrg(t.db);
    const admin = await addMemberWithKey(t.db, s.org.id, 'admin', undefined, 'admin@example.com');
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, admin.key, '/keys');
    const row = page.locator('#keys-table').getByRole('row').filter({ hasText: 'this browser' });
    await row.waitFor();
    assert.equal((await call(t.app, 'PATCH', `/v1/members/${admin.memberId}`, { key: s.key, body: { role: 'developer' } })).status, 200);
    await row.getByRole('button', { name: /^Edit access/ }).click();
    const edit = page.getByRole('region', { name: /^Edit access of/ });
    await edit.getByRole('radio', { name: /^Custom scopes/ }).check();
    await scopeBox(edit, 'usage:read').check();
    await edit.getByRole('button', { name: 'Save access' }).click();
    await edit.locator('#edit-error', { hasText: 'api_keys.manage' }).waitFor();
    await expectText(edit.locator('#edit-error'), /Ask an admin/);
    assert.equal((await keys(s.key)).find((k) => k.id === admin.keyId)?.access_mode, 'full', 'nothing changed');
    await page.close();

    // a developer sees only their own keys: no owner column, no access editing
    const { page: dev } = await openDashboardPage(t.browser);
    await signIn(dev, t.base, admin.key, '/keys');
    await dev.locator('#keys-table').getByRole('row').filter({ hasText: 'this browser' }).waitFor();
    assert.equal(await dev.locator('#keys-table').getByRole('row').count(), 2, 'the header and their own key');
    assert.equal(await dev.getByRole('columnheader', { name: 'Owner' }).count(), 0);
    assert.equal(await dev.getByRole('button', { name: /^Edit access/ }).count(), 0);
    assert.deepEqual(await seriousA11yViolations(dev), []);
    await dev.close();

    // a custom-scope key: key management is closed to it, and the page says why, with the API's 403
    const narrow = await addMemberWithKey(t.db, s.org.id, 'admin', ['endpoints:read']);
    const { page: p3 } = await openDashboardPage(t.browser);
    await signIn(p3, t.base, narrow.key, '/keys');
    await p3.getByRole('main').getByRole('alert').waitFor();
    await expectText(p3.locator('main'), /key management is open to full-access keys only/);
    assert.equal(await p3.getByRole('region', { name: 'New key' }).count(), 0);
    assert.deepEqual(await seriousA11yViolations(p3), []);
    assert.deepEqual(errors, []);
    await p3.close();
  });

  it('revoking the key this browser uses returns to sign-in with the reason', async () => {
    const s = await seedOrg(t.db);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/keys');
    const row = page.locator('#keys-table').getByRole('row').filter({ hasText: 'this browser' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await expectText(row.getByRole('group'), /signs you out/);
    await row.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('alert').filter({ hasText: 'no longer accepted' }).waitFor();
    assert.equal(await page.getByLabel('API key').count(), 1);
    assert.equal(await page.evaluate(`localStorage.getItem('weir.key')`), null);
    assert.equal((await call(t.app, 'GET', '/v1/me', { key: s.key })).status, 401);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('creates a key by keyboard alone, and fits 360 px', async () => {
    const s = await seedOrg(t.db);
    const { page, errors } = await openDashboardPage(t.browser, { width: 360, height: 740 });
    await signIn(page, t.base, s.key, '/keys');
    const form = page.getByRole('region', { name: 'New key' });
    await form.getByLabel('Name').focus();
    await page.keyboard.type('Keyboard');
    await form.getByRole('radio', { name: /^Full access/ }).focus();
    await page.keyboard.press('ArrowDown'); // to Custom scopes
    assert.equal(await form.getByRole('radio', { name: /^Custom scopes/ }).isChecked(), true);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Read + Notify');
    await page.keyboard.press('Enter');
    assert.deepEqual((await checkedScopes(form)).length, READ_NOTIFY_PRESET.length);
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(await seriousA11yViolations(page), []);
    await form.getByLabel('Name').focus();
    await page.keyboard.press('Enter'); // submits the form
    await page.locator('.secret code').waitFor();
    assert.equal((await keys(s.key)).find((k) => k.name === 'Keyboard')?.access_mode, 'custom');
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
