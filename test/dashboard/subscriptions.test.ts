import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../src/db/ids.ts';
import { EVENT_TYPES } from '../../src/subscriptions/event-types.ts';
import { addMemberWithKey, call, seedOrg } from '../helpers/app.ts';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard, waitForFocus } from '../helpers/browser.ts';
import { insertEndpoint } from '../helpers/fixtures.ts';

/** The subscriptions page in a real browser (Debian's chromium) against the real API on a real port. */
describe('dashboard: subscriptions', () => {
  const t = useDashboard();
  const list = async (key: string) => (await call(t.app, 'GET', '/v1/subscriptions', { key })).json.data;

  it('serves its module, which never renders API text as HTML', async () => {
    const js = await call(t.app, 'GET', '/dashboard/pages/subscriptions.js');
    assert.equal(js.status, 200);
    assert.match(js.res.headers['content-type'] as string, /^text\/javascript/);
    assert.doesNotMatch(js.res.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|dangerouslySetInnerHTML/);
  });

  it('creates a subscription showing its secret once, refuses a bad one at the form, rotates the secret, and deletes it', async () => {
    const s = await seedOrg(t.db, { plan: 'starter' });
    const endpoint = await insertEndpoint(t.db, s.org.id, { name: 'Stripe <i>live</i>' });
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/subscriptions');
    await page.getByRole('heading', { name: 'Subscriptions', level: 1 }).waitFor();
    await page.getByText('No subscriptions yet.').waitFor();
    // the six event types the API accepts, each a labelled checkbox
    const boxes = page.getByRole('group', { name: 'Event types' }).getByRole('checkbox');
    assert.equal(await boxes.count(), EVENT_TYPES.length);
    for (const type of EVENT_TYPES) assert.equal(await page.getByRole('checkbox', { name: type }).count(), 1, type);
    assert.deepEqual(await seriousA11yViolations(page), []);

    const url = 'https://hooks.example.com/<b>zap</b>';
    await page.getByLabel('Target URL').fill(url);
    await page.getByRole('checkbox', { name: 'incident.opened' }).check();
    await page.getByRole('checkbox', { name: 'request.captured' }).check();
    // endpoint names stay text in the picker
    await page.getByLabel('Endpoint', { exact: true }).selectOption({ label: 'Stripe <i>live</i>' });
    await page.getByRole('button', { name: 'Create subscription' }).click();
    const secret = page.locator('.secret code');
    await secret.waitFor();
    const first = await secret.innerText();
    assert.match(first, /^whsec_/);
    await expectText(page.locator('.secret'), /only this once/);
    const listed = (await list(s.key)).data;
    assert.equal(listed.length, 1);
    assert.deepEqual(listed[0].event_types, ['request.captured', 'incident.opened'], 'sent in the API order whatever the ticking order');
    assert.equal(listed[0].endpoint_id, endpoint.id);
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: url, exact: true }) });
    await card.waitFor();
    await expectText(card, /Stripe <i>live<\/i>/, 'the endpoint name stays text');
    assert.equal(await page.locator('main b, main i').count(), 0, 'markup in the URL and the name stays text');
    assert.deepEqual(await seriousA11yViolations(page), []);

    // refused by the API: the message shows at the form, nothing is stored
    await page.getByLabel('Target URL').fill('http://not-https.example.com');
    await page.getByRole('checkbox', { name: 'incident.opened' }).check();
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page.locator('#sub-error', { hasText: 'https' }).waitFor();
    // no event type at all: the API's 400 too
    await page.getByLabel('Target URL').fill('https://hooks.example.com/none');
    await page.getByRole('checkbox', { name: 'incident.opened' }).uncheck();
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page.locator('#sub-error', { hasText: /event_types|event type/i }).waitFor();
    assert.equal((await list(s.key)).meta.count, 1);
    assert.deepEqual(await seriousA11yViolations(page), []);

    // rotate: asked inline first, then a new secret shown once, with the 24 h overlap explained
    await card.getByRole('button', { name: 'Rotate secret' }).click();
    await expectText(card.getByRole('group'), /24 hours/);
    assert.deepEqual(await seriousA11yViolations(page), []);
    await card.getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.locator('.secret', { hasText: 'New signing secret' }).waitFor();
    const second = await secret.innerText();
    assert.match(second, /^whsec_/);
    assert.notEqual(second, first);
    await expectText(page.locator('.secret'), /24 hours/);
    const rotated = (await call(t.app, 'GET', `/v1/subscriptions/${listed[0].id}`, { key: s.key })).json.data;
    assert.ok(rotated.previous_secret_expires_at, 'the old secret keeps signing for a while');
    await card.getByText(/Old secret/).waitFor();

    // recent deliveries: none yet
    await card.getByRole('button', { name: 'Recent deliveries' }).click();
    await card.getByText(/No events yet/).waitFor();
    assert.equal(await card.getByRole('button', { name: 'Hide deliveries' }).getAttribute('aria-expanded'), 'true');

    // delete, confirmed inline
    await card.getByRole('button', { name: 'Delete' }).click();
    await card.getByRole('button', { name: 'Delete subscription' }).click();
    await card.waitFor({ state: 'detached' });
    assert.equal((await list(s.key)).meta.count, 0);

    // another page replaces this one (the old view was hidden by the others)
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Incidents' }).click();
    await page.waitForURL(/\/incidents$/);
    await page.getByRole('heading', { name: 'Subscriptions', level: 1 }).waitFor({ state: 'detached' });
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows the failing flag, its reason and the deliveries, as text', async () => {
    const s = await seedOrg(t.db);
    const created = await call(t.app, 'POST', '/v1/subscriptions', { key: s.key, body: { target_url: 'https://hooks.example.com/flaky', event_types: ['incident.opened'] } });
    assert.equal(created.status, 201);
    const id = created.json.data.id;
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/subscriptions');
    const card = page.getByRole('listitem').filter({ hasText: 'https://hooks.example.com/flaky' });
    await card.getByText('active', { exact: true }).waitFor();
    // the delivery worker would write this after five failures in a row (docs/subscriptions.md)
    await t.db.query(
      `update subscriptions set status = 'failing', status_reason = $2, failing_since = now(), consecutive_failures = 5, last_failure_at = now() where id = $1::uuid`,
      [id, 'Deliveries fail: 502 <script>alert(1)</script>'],
    );
    await t.db.query(
      `insert into subscription_events (id, organization_id, subscription_id, event_type, payload, status, attempt_count, last_status_code, last_error, last_attempt_at)
       values ($1::uuid, $2::uuid, $3::uuid, 'incident.opened', '{}', 'dead', 8, 502, '<img src=x onerror=alert(1)>', now())`,
      [newId(), s.org.id, id],
    );
    // the list refreshes by itself
    await card.getByText('failing', { exact: true }).waitFor({ timeout: 20_000 });
    await expectText(card, /Deliveries fail: 502 <script>alert\(1\)<\/script>/);
    await expectText(card, /5 failed attempts in a row/);
    await card.getByRole('button', { name: 'Recent deliveries' }).click();
    const row = card.getByRole('row').filter({ hasText: 'incident.opened' });
    await row.waitFor();
    await expectText(row, /dead/);
    await expectText(row, /<img src=x onerror=alert\(1\)>/);
    assert.equal(await page.locator('main img, main script').count(), 0);
    assert.deepEqual(await seriousA11yViolations(page), []);

    // the sample payload of an incident event (no incident yet: the fixed example)
    await page.getByLabel('Event type').selectOption('incident.opened');
    await page.getByRole('button', { name: 'Show sample' }).click();
    await page.getByText('A fixed example (nothing real').waitFor();
    await expectText(page.locator('main pre').last(), /"type": "incident.opened"/);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('lets a viewer read but not change, and shows a 403 at the action when a role is lowered under an open page', async () => {
    const s = await seedOrg(t.db);
    const viewer = await addMemberWithKey(t.db, s.org.id, 'viewer');
    const dev = await addMemberWithKey(t.db, s.org.id, 'developer');
    const created = await call(t.app, 'POST', '/v1/subscriptions', { key: s.key, body: { target_url: 'https://hooks.example.com/kept', event_types: ['replay.completed'] } });
    assert.equal(created.status, 201);

    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, viewer.key, '/subscriptions');
    await page.getByRole('heading', { name: 'https://hooks.example.com/kept' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Delete' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Create subscription' }).count(), 0);
    await expectText(page.locator('main'), /can list subscriptions but not create or delete them/);
    assert.deepEqual(await seriousA11yViolations(page), []);
    await page.close();

    const { page: p2 } = await openDashboardPage(t.browser);
    await signIn(p2, t.base, dev.key, '/subscriptions');
    const card = p2.getByRole('listitem').filter({ hasText: 'https://hooks.example.com/kept' });
    await card.getByRole('button', { name: 'Delete' }).waitFor();
    // an admin lowers the developer to viewer while the page is open
    assert.equal((await call(t.app, 'PATCH', `/v1/members/${dev.memberId}`, { key: s.key, body: { role: 'viewer' } })).status, 200);
    await card.getByRole('button', { name: 'Delete' }).click();
    await card.getByRole('button', { name: 'Delete subscription' }).click();
    await card.getByRole('alert').filter({ hasText: /subscriptions\.manage|permission/ }).waitFor();
    await expectText(card.getByRole('alert'), /Ask an admin/);
    assert.equal((await list(s.key)).meta.count, 1, 'nothing was deleted');
    assert.deepEqual(errors, []);
    await p2.close();
  });

  it('creates a subscription by keyboard alone', async () => {
    const s = await seedOrg(t.db);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, '/subscriptions');
    await page.getByText('No subscriptions yet.').waitFor();
    await page.getByLabel('Target URL').focus();
    await page.keyboard.type('https://hooks.example.com/keys');
    await page.keyboard.press('Tab'); // request.captured
    await page.keyboard.press('Tab'); // request.forward_failed
    await page.keyboard.press('Space');
    assert.equal(await page.getByRole('checkbox', { name: 'request.forward_failed' }).isChecked(), true);
    await page.getByRole('button', { name: 'Create subscription' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('.secret code').waitFor();
    assert.deepEqual((await list(s.key)).data[0].event_types, ['request.forward_failed']);
    // delete by keyboard: the confirmation takes the focus
    const card = page.getByRole('listitem').filter({ hasText: 'https://hooks.example.com/keys' });
    await card.getByRole('button', { name: 'Delete' }).focus();
    await page.keyboard.press('Enter');
    await waitForFocus(page, 'Delete subscription');
    await page.keyboard.press('Enter');
    await card.waitFor({ state: 'detached' });
    assert.equal((await list(s.key)).meta.count, 0);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('fits a 360 px screen with a long target URL', async () => {
    const s = await seedOrg(t.db);
    await call(t.app, 'POST', '/v1/subscriptions', {
      key: s.key,
      body: { target_url: `https://hooks.example.com/${'very-long-path-segment-'.repeat(8)}`, event_types: ['request.captured', 'incident.updated'] },
    });
    const { page, errors } = await openDashboardPage(t.browser, { width: 360, height: 740 });
    await signIn(page, t.base, s.key, '/subscriptions');
    const card = page.getByRole('listitem').filter({ hasText: 'very-long-path-segment' });
    await card.waitFor();
    await card.getByRole('button', { name: 'Recent deliveries' }).click();
    await card.getByText(/No events yet/).waitFor();
    assert.equal(await horizontalOverflow(page), 0);
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
