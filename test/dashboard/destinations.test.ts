import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { call, seedOrg, type Seeded } from '../helpers/app.ts';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard, waitForFocus } from '../helpers/browser.ts';
import { insertEndpoint } from '../helpers/fixtures.ts';

const MARKUP = 'Billing <i>svc</i>';

describe('dashboard: destinations', () => {
  const t = useDashboard();

  const v1 = async (s: Seeded, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) => {
    const r = await call(t.app, method, '/v1' + path, { key: s.key, body });
    return r.json?.data;
  };
  const forwards = async (s: Seeded, endpointId: string) => (await v1(s, 'GET', `/endpoints/${endpointId}/destinations`)).data as Array<Record<string, any>>;

  async function openTab(s: Seeded, endpointId: string, opts: { width?: number } = {}): Promise<{ page: Page; errors: string[] }> {
    const { page, errors } = await openDashboardPage(t.browser, opts);
    await signIn(page, t.base, s.key, `/endpoints/${endpointId}/destinations`);
    await page.getByRole('heading', { level: 2, name: 'Forward destinations' }).waitFor();
    return { page, errors };
  }

  describe('the saved library', () => {
    it('saves a destination attached to an endpoint, opens it, edits it (the URL follows to the attachment), attaches it again and deletes it', async () => {
      const s = await seedOrg(t.db);
      const e1 = await insertEndpoint(t.db, s.org.id, { name: 'orders' });
      const e2 = await insertEndpoint(t.db, s.org.id, { name: 'refunds' });
      const { page, errors } = await openDashboardPage(t.browser);
      await signIn(page, t.base, s.key);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Destinations' }).click();
      await page.getByText('No saved destinations yet.').waitFor();
      assert.deepEqual(await seriousA11yViolations(page), []);

      await page.getByLabel('Name', { exact: true }).fill(MARKUP);
      await page.getByLabel('URL', { exact: true }).fill('https://billing.example.com/hooks');
      await page.getByLabel('Who sees it in the library').selectOption('private');
      await page.getByLabel(/Reusable/).uncheck();
      await page.getByLabel('Also attach it to (optional)').selectOption({ label: 'orders' });
      await page.getByRole('button', { name: 'Save destination' }).click();
      await page.getByRole('status').filter({ hasText: 'and attached it to orders' }).waitFor();
      const [saved] = (await v1(s, 'GET', '/destinations')).data;
      assert.deepEqual([saved.name, saved.url, saved.visibility, saved.is_reusable, saved.endpoint_count], [MARKUP, 'https://billing.example.com/hooks', 'private', false, 1]);
      assert.deepEqual((await forwards(s, e1.id)).map((d) => [d.name, d.url, d.saved_destination_id]), [[MARKUP, 'https://billing.example.com/hooks', saved.id]]);
      const row = page.getByRole('row').filter({ hasText: 'billing.example.com' });
      await row.waitFor();
      await expectText(row, /Billing <i>svc<\/i>\s+https:\/\/billing\.example\.com\/hooks\s+Private\s+one endpoint only\s+1/);
      assert.equal(await page.locator('main i').count(), 0, 'a name is text, never markup');

      await row.getByRole('link', { name: MARKUP }).click();
      await page.getByRole('heading', { level: 1, name: MARKUP }).waitFor();
      assert.equal(new URL(page.url()).pathname, `/destinations/${saved.id}`);
      await page.getByRole('heading', { name: 'Attached to 1 endpoint' }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'orders' }).getAttribute('href'), `/endpoints/${e1.id}/destinations`);
      assert.deepEqual(await seriousA11yViolations(page), []);

      // not reusable: a second endpoint is refused by the API, shown at the attach form
      await page.getByLabel('Endpoint', { exact: true }).selectOption({ label: 'refunds' });
      await page.getByRole('button', { name: 'Attach' }).click();
      await page.locator('#attach-error').waitFor();
      assert.deepEqual(await forwards(s, e2.id), []);

      // edit: reusable, and a new URL, which the attachment follows
      const edit = page.locator('#edit-destination');
      await edit.getByLabel('URL', { exact: true }).fill('https://billing.example.com/v2');
      await edit.getByLabel(/Reusable/).check();
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await edit.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      assert.equal((await forwards(s, e1.id))[0].url, 'https://billing.example.com/v2');
      assert.equal((await v1(s, 'GET', `/destinations/${saved.id}`)).is_reusable, true);

      await page.getByLabel('Endpoint', { exact: true }).selectOption({ label: 'refunds' });
      await page.getByRole('button', { name: 'Attach' }).click();
      await page.getByRole('heading', { name: 'Attached to 2 endpoints' }).waitFor();
      assert.equal((await forwards(s, e2.id))[0].url, 'https://billing.example.com/v2');

      // an edit the API refuses shows at the form and changes nothing
      await edit.getByLabel('URL', { exact: true }).fill('http://plain.example.com/');
      await edit.getByRole('button', { name: 'Save changes' }).click();
      await page.locator('#edit-dest-error', { hasText: 'https://' }).waitFor();
      assert.equal((await v1(s, 'GET', `/destinations/${saved.id}`)).url, 'https://billing.example.com/v2');

      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('button', { name: 'Delete from the library' }).click();
      await page.waitForURL(/\/destinations$/);
      assert.equal((await call(t.app, 'GET', `/v1/destinations/${saved.id}`, { key: s.key })).status, 404);
      // its attachments keep forwarding, as stand-alone destinations
      assert.deepEqual((await forwards(s, e1.id)).map((d) => [d.url, d.saved_destination_id]), [['https://billing.example.com/v2', null]]);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('shows the 201\'s attachment_error (saved, not attached), an invalid URL\'s 400, and pages the list', async () => {
      const s = await seedOrg(t.db, { plan: 'free' }); // 3 forward destinations per endpoint
      const full = await insertEndpoint(t.db, s.org.id, { name: 'full' });
      for (let i = 0; i < 3; i++) await v1(s, 'POST', '/destinations', { name: `d${i}`, url: `https://d${i}.example.com/`, endpoint_id: full.id });
      for (let i = 3; i < 26; i++) await v1(s, 'POST', '/destinations', { name: `d${i}`, url: `https://d${i}.example.com/` });
      const { page, errors } = await openDashboardPage(t.browser);
      await signIn(page, t.base, s.key, '/destinations');
      await page.getByRole('link', { name: 'd25', exact: true }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'd0', exact: true }).count(), 0, '25 a page, newest first');
      await page.getByRole('link', { name: 'Older' }).click();
      await page.getByRole('link', { name: 'd0', exact: true }).waitFor();
      await page.getByRole('link', { name: 'Newest' }).click();
      await page.getByRole('link', { name: 'd25', exact: true }).waitFor();

      await page.getByLabel('Name', { exact: true }).fill('one too many');
      await page.getByLabel('URL', { exact: true }).fill('https://extra.example.com/');
      await page.getByLabel('Also attach it to (optional)').selectOption({ label: 'full' });
      await page.getByRole('button', { name: 'Save destination' }).click();
      const note = page.locator('#attachment-error');
      await note.waitFor();
      await expectText(note, /Saved one too many to the library, but it was not attached to full: .*3/);
      const names = [...(await v1(s, 'GET', '/destinations?limit=100')).data].map((d: { name: string }) => d.name);
      assert.ok(names.includes('one too many'), 'the destination was still created');
      assert.equal((await forwards(s, full.id)).length, 3);

      await page.getByLabel('Name', { exact: true }).fill('plain');
      await page.getByLabel('URL', { exact: true }).fill('http://plain.example.com/');
      await page.getByRole('button', { name: 'Save destination' }).click();
      await page.locator('#new-dest-error', { hasText: 'https://' }).waitFor();
      assert.equal([...(await v1(s, 'GET', '/destinations?limit=100')).data].some((d: { name: string }) => d.name === 'plain'), false);
      assert.deepEqual(await seriousA11yViolations(page), []);
      assert.deepEqual(errors, []);
      await page.close();
    });
  });

  describe("an endpoint's Destinations tab", () => {
    it('adds https destinations (new and from the library) and an agent destination, with the API\'s refusals at the form', async () => {
      const s = await seedOrg(t.db); // starter: 5 forward destinations per endpoint
      const ep = await insertEndpoint(t.db, s.org.id, { name: 'payments' });
      const lib = await v1(s, 'POST', '/destinations', { name: 'Shared CRM', url: 'https://crm.example.com/in' });
      const agent = await v1(s, 'POST', '/agents', { name: 'laptop <u>x</u>' });
      const { page, errors } = await openTab(s, ep.id);
      await page.getByText('No forward destinations yet.').waitFor();
      assert.deepEqual(await seriousA11yViolations(page), []);

      const https = page.locator('#add-https');
      await https.getByLabel('Name', { exact: true }).fill(MARKUP);
      await https.getByLabel('URL', { exact: true }).fill('https://billing.example.com/hooks');
      await https.getByRole('button', { name: 'Add destination' }).click();
      await https.getByRole('status').filter({ hasText: `Added “${MARKUP}”` }).waitFor();
      await https.getByLabel('From the saved library').check();
      await https.getByLabel('Saved destination').selectOption({ label: 'Shared CRM (https://crm.example.com/in)' });
      await https.getByRole('button', { name: 'Add destination' }).click();
      await https.getByRole('status').filter({ hasText: 'Added “Shared CRM”' }).waitFor();
      // attaching the same saved destination twice: the API's 409 at the form
      await https.getByLabel('Saved destination').selectOption({ label: 'Shared CRM (https://crm.example.com/in)' });
      await https.getByRole('button', { name: 'Add destination' }).click();
      await page.locator('#add-https-error').waitFor();

      const form = page.locator('#add-agent');
      await form.getByLabel('Name', { exact: true }).fill('local');
      await form.getByRole('button', { name: 'Add agent destination' }).click();
      await page.locator('#add-agent-error', { hasText: /agent_id.*target_port|target_port.*agent_id/ }).waitFor(); // missing_field names them
      await form.getByLabel('Agent', { exact: true }).selectOption({ label: 'laptop <u>x</u> (development, disconnected)' });
      await form.getByLabel('Target port').fill('70000');
      await form.getByLabel('Target path').fill('/hooks');
      await form.getByRole('button', { name: 'Add agent destination' }).click();
      await page.locator('#add-agent-error', { hasText: /port/ }).waitFor();
      await form.getByLabel('Target port').fill('3000');
      await form.getByLabel('Target path').fill('hooks');
      await form.getByRole('button', { name: 'Add agent destination' }).click();
      await page.locator('#add-agent-error', { hasText: /target_path|path/ }).waitFor();
      await form.getByLabel('Target path').fill('/hooks?x=1');
      await form.getByLabel(/Treat as development/).check();
      await form.getByRole('button', { name: 'Add agent destination' }).click();
      await form.getByRole('status').filter({ hasText: 'Added “local”' }).waitFor();

      const list = await forwards(s, ep.id);
      assert.deepEqual(
        list.map((d) => [d.name, d.destination_type, d.url, d.agent_id, d.target_port, d.target_path, d.environment_override, d.saved_destination_id === lib.id]),
        [
          [MARKUP, 'https', 'https://billing.example.com/hooks', null, null, null, null, false],
          ['Shared CRM', 'https', 'https://crm.example.com/in', null, null, null, null, true],
          ['local', 'agent', null, agent.id, 3000, '/hooks?x=1', 'development', false],
        ],
      );
      const items = page.locator('li.fd');
      await items.nth(2).waitFor();
      assert.deepEqual(await items.locator('h3').allInnerTexts(), [MARKUP, 'Shared CRM', 'local'], 'in sort order');
      await expectText(items.nth(2), /agent laptop <u>x<\/u> → http:\/\/127\.0\.0\.1:3000\/hooks\?x=1/);
      assert.equal(await page.locator('main i, main u').count(), 0, 'names are text, never markup');
      assert.deepEqual(await seriousA11yViolations(page), []);

      // the plan's max_forward_destinations (starter: 5): the 403 plan_limit at the agent form
      await v1(s, 'POST', '/destinations', { name: 'four', url: 'https://four.example.com/', endpoint_id: ep.id });
      await v1(s, 'POST', '/destinations', { name: 'five', url: 'https://five.example.com/', endpoint_id: ep.id });
      await form.getByLabel('Name', { exact: true }).fill('sixth');
      await form.getByLabel('Agent', { exact: true }).selectOption({ label: 'laptop <u>x</u> (development, disconnected)' });
      await form.getByLabel('Target port').fill('3001');
      await form.getByRole('button', { name: 'Add agent destination' }).click();
      await page.locator('#add-agent-error', { hasText: /plan|5/ }).waitFor();
      assert.equal((await forwards(s, ep.id)).length, 5);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('disables, sets the method, retries and rate limit (the API\'s 400 at the form), explains agent retries, and detaches', async () => {
      const s = await seedOrg(t.db);
      const ep = await insertEndpoint(t.db, s.org.id, { name: 'settings' });
      await v1(s, 'POST', '/destinations', { name: 'hook', url: 'https://hook.example.com/', endpoint_id: ep.id });
      const agent = await v1(s, 'POST', '/agents', { name: 'box' });
      await v1(s, 'POST', '/destinations', { destination_type: 'agent', name: 'dev', endpoint_id: ep.id, agent_id: agent.id, target_port: 8080, target_path: '/' });
      const { page, errors } = await openTab(s, ep.id);
      const hook = page.locator('li.fd').filter({ has: page.getByRole('heading', { name: 'hook', exact: true }) });
      await hook.waitFor();

      await hook.getByRole('button', { name: 'Disable hook' }).click();
      await hook.getByText('disabled', { exact: true }).waitFor();
      assert.equal((await forwards(s, ep.id))[0].enabled, false);
      await hook.getByRole('button', { name: 'Enable hook' }).click();
      await hook.getByText('enabled', { exact: true }).waitFor();
      assert.equal((await forwards(s, ep.id))[0].enabled, true);

      await hook.getByRole('button', { name: 'Settings of hook' }).click();
      const settings = hook.getByRole('form', { name: 'Settings of hook' });
      await settings.getByLabel('Method override').fill('PUT');
      await settings.getByLabel('Retry schedule (seconds)').fill('10, 60 600');
      await settings.getByLabel(/Intelligent retry/).uncheck();
      await settings.getByLabel('Limit the rate').check();
      await settings.getByLabel('Requests per minute').fill('');
      await settings.getByRole('button', { name: 'Save settings' }).click();
      await settings.getByRole('alert').filter({ hasText: 'rate_limit_per_minute' }).waitFor();
      assert.equal((await forwards(s, ep.id))[0].method_override, null, 'a refused PATCH changes nothing');
      await settings.getByLabel('Retry schedule (seconds)').fill('10, soon');
      await settings.getByRole('button', { name: 'Save settings' }).click();
      await settings.getByRole('alert').filter({ hasText: 'whole numbers of seconds' }).waitFor();
      await settings.getByLabel('Retry schedule (seconds)').fill('10, 60 600');
      await settings.getByLabel('Requests per minute').fill('120');
      await settings.getByRole('button', { name: 'Save settings' }).click();
      await settings.waitFor({ state: 'detached' });
      const [h, a] = await forwards(s, ep.id);
      assert.deepEqual(
        [h.method_override, h.retry_enabled, h.retry_schedule, h.intelligent_retry, h.rate_limit_enabled, h.rate_limit_per_minute],
        ['PUT', true, [10, 60, 600], false, true, 120],
      );
      await hook.getByText(/sent as PUT · retries after 10, 60, 600 s · at most 120\/min/).waitFor();

      const dev = page.locator('li.fd').filter({ has: page.getByRole('heading', { name: 'dev', exact: true }) });
      await dev.getByRole('button', { name: 'Settings of dev' }).click();
      const agentSettings = dev.getByRole('form', { name: 'Settings of dev' });
      await agentSettings.getByText("Agent destinations retry by the agent's environment").waitFor();
      assert.equal(await agentSettings.getByLabel('Retry schedule (seconds)').count(), 0, 'no retry settings on an agent destination');
      assert.deepEqual(await seriousA11yViolations(page), []);
      await agentSettings.getByLabel('Target port').fill('9090');
      await agentSettings.getByLabel('Target path').fill('/in');
      await agentSettings.getByRole('button', { name: 'Save settings' }).click();
      await agentSettings.waitFor({ state: 'detached' });
      const after = (await forwards(s, ep.id)).find((d) => d.id === a.id)!;
      assert.deepEqual([after.target_port, after.target_path, after.retry_schedule], [9090, '/in', null]);

      // forwarding order
      await dev.getByRole('button', { name: 'Move up dev' }).click();
      await page.locator('li.fd').first().getByRole('heading', { name: 'dev', exact: true }).waitFor();
      assert.deepEqual((await forwards(s, ep.id)).map((d) => [d.name, d.sort_order]), [['dev', 1], ['hook', 2]]);
      assert.equal(await dev.getByRole('button', { name: 'Move up dev' }).count(), 0, 'the first cannot move up');
      // the keyboard stays with the moved destination
      await waitForFocus(page, 'Move down dev');
      await page.keyboard.press('Enter');
      await page.locator('li.fd').first().getByRole('heading', { name: 'hook', exact: true }).waitFor();
      await waitForFocus(page, 'Move up dev');
      assert.deepEqual((await forwards(s, ep.id)).map((d) => d.name), ['hook', 'dev']);
      await page.keyboard.press('Enter');
      await page.locator('li.fd').first().getByRole('heading', { name: 'dev', exact: true }).waitFor();

      await dev.getByRole('button', { name: 'Detach' }).click();
      await dev.getByRole('button', { name: 'Detach it' }).click();
      await dev.waitFor({ state: 'detached' });
      assert.deepEqual((await forwards(s, ep.id)).map((d) => d.name), ['hook']);
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('is operable by keyboard, fits 360 px, and hides editing from a viewer', async () => {
      const s = await seedOrg(t.db);
      const ep = await insertEndpoint(t.db, s.org.id, { name: 'keys' });
      await v1(s, 'POST', '/destinations', { name: 'a-rather-long-destination-name-for-a-small-screen', url: 'https://a-very-long-host-name.example.com/with/a/long/path/segment/to/see/it/wrap', endpoint_id: ep.id });
      const { page, errors } = await openTab(s, ep.id, { width: 360 });
      await page.locator('li.fd').first().waitFor();
      assert.equal(await horizontalOverflow(page), 0);
      await page.getByRole('button', { name: /^Disable/ }).focus();
      await page.keyboard.press('Enter');
      await page.getByText('disabled', { exact: true }).waitFor();
      assert.equal((await forwards(s, ep.id))[0].enabled, false);
      const name = page.locator('#add-https').getByLabel('Name', { exact: true });
      await name.focus();
      await page.keyboard.type('typed');
      await page.keyboard.press('Tab');
      await page.keyboard.press('End');
      await page.keyboard.type('typed.example.com/');
      await page.keyboard.press('Enter');
      await page.locator('#add-https').getByRole('status').filter({ hasText: 'Added “typed”' }).waitFor();
      assert.equal((await forwards(s, ep.id))[1].url, 'https://typed.example.com/');
      await page.locator('li.fd').nth(1).getByRole('button', { name: /^Settings/ }).click();
      assert.equal(await horizontalOverflow(page), 0);
      assert.deepEqual(await seriousA11yViolations(page), []);
      await page.close();

      const viewer = await seedOrg(t.db, { role: 'viewer' });
      const vep = await insertEndpoint(t.db, viewer.org.id, { name: 'read only' });
      const v = await openTab(viewer, vep.id);
      await v.page.getByText('No forward destinations yet.').waitFor();
      assert.equal(await v.page.locator('#add-https, #add-agent').count(), 0);
      await v.page.goto(t.base + '/destinations');
      await v.page.getByText('No saved destinations yet.').waitFor();
      assert.equal(await v.page.getByRole('button', { name: 'Save destination' }).count(), 0);
      assert.deepEqual([...errors, ...v.errors], []);
      await v.page.close();
    });
  });
});
