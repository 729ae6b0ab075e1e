import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { storeCaptures } from '../../src/ingest/store.ts';
import { dedupKeyHash, type DedupSettings } from '../../src/routing/dedup.ts';
import { call, seedOrg } from '../helpers/app.ts';
import { expectText, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { captureOf, insertCaptures } from '../helpers/fixtures.ts';
import { startTestWorker, waitUntil } from '../delivery/helpers.ts';

const LONG = { timeout: 20_000 };
const INVOICES = { body: { type: { $startsWith: 'invoice.' } } };

// Issue 26 in the dashboard (docs/routing.md): the filter editor on the
// destination forms with its JSON check, the API's 400 beside it and a test
// against a capture; the filtered badge on forwards; deduplication settings
// and the duplicate badge.
describe('dashboard: routing', () => {
  const t = useDashboard();

  it('saves a filter, shows its 400, tests it on a capture, shows a filtered forward; sets deduplication and shows duplicates', async () => {
    const s = await seedOrg(t.db);
    const ep = (await call(t.app, 'POST', '/v1/endpoints', { key: s.key, body: { name: 'billing' } })).json.data;
    const v1 = async (method: string, path: string, body?: unknown) => (await call(t.app, method as 'GET', path, { key: s.key, body })).json;
    const charge = { type: 'charge.succeeded', id: 'evt_1' };
    await insertCaptures(t.db, ep, [{ path: '/stripe', body: JSON.stringify(charge) }]);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}/destinations`);

    // create: a filter written in the add form is saved with the destination
    const add = page.locator('#add-https');
    await add.getByLabel('Name', { exact: true }).fill('invoices');
    await add.getByLabel('URL', { exact: true }).fill('https://billing.example.com/hooks');
    await add.locator('#add-https-filter').fill(JSON.stringify(INVOICES));
    await add.getByRole('button', { name: 'Add destination' }).click();
    await add.getByRole('status').filter({ hasText: 'Added “invoices”' }).waitFor(LONG);
    const [created] = (await v1('GET', `/v1/endpoints/${ep.id}/destinations`)).data.data;
    assert.deepEqual(created.filter, INVOICES);

    // edit: JSON checked in the page (nothing sent), then the API's 400 naming the path beside the editor
    const item = page.locator('li.fd').filter({ has: page.getByRole('heading', { name: 'invoices', exact: true }) });
    await item.getByRole('button', { name: 'Settings of invoices' }).click();
    const form = item.getByRole('form', { name: 'Settings of invoices' });
    const editor = form.locator(`#fd-${created.id}-filter`);
    assert.equal(await editor.inputValue(), JSON.stringify(INVOICES, null, 2));
    assert.match(await editor.evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { fontFamily: string } }).getComputedStyle(el).fontFamily), /mono/i);
    await editor.fill('{"body": {"type": ');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expectText(form.locator(`#fd-${created.id}-filter-json`), /not valid JSON/);
    await editor.fill('{"body": {"type": {"$startsWit": "invoice."}}}');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expectText(form.locator(`#fd-${created.id}-filter-error`), /filter\.body\.type\.\$startsWit/);
    assert.deepEqual((await v1('GET', `/v1/endpoints/${ep.id}/destinations`)).data.data[0].filter, INVOICES, 'a refused filter changes nothing');
    assert.deepEqual(await seriousA11yViolations(page), []);

    // test against the newest capture, then save
    await editor.fill('{"body": {"type": {"$startsWith": "invoice."}, "id": {"$exist": true}}}');
    await form.getByRole('button', { name: 'Test the filter against a recent capture' }).click();
    await expectText(form.locator(`#fd-${created.id}-filter-result`), /Does not match: body\.type: expected \$startsWith "invoice\." got "charge\.succeeded"/);
    await editor.fill('{"body": {"id": "evt_1"}}');
    await form.getByRole('button', { name: 'Test the filter against a recent capture' }).click();
    await expectText(form.locator(`#fd-${created.id}-filter-result`), /Matches/);
    await editor.fill(JSON.stringify(INVOICES));
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.waitFor({ state: 'detached', ...LONG });
    assert.deepEqual((await v1('GET', `/v1/endpoints/${ep.id}/destinations`)).data.data[0].filter, INVOICES);

    // the real delivery worker filters the next capture out: the badge and the reason on its forward
    const worker = await startTestWorker(t.db);
    try {
      const [next] = await insertCaptures(t.db, ep, [{ path: '/stripe', body: JSON.stringify({ ...charge, id: 'evt_2' }) }]);
      await waitUntil(async () => (await v1('GET', `/v1/requests/${next.id}/forwards`)).data.data[0]?.status === 'filtered', 'the filtered forward');
      await page.goto(`${t.base}/endpoints/${ep.id}/requests/${next.id}`);
      const forward = page.locator('.forwards .forward');
      await expectText(forward.locator('.badge'), 'filtered');
      await expectText(forward.locator('[data-filter-reason]'), /body\.type: expected \$startsWith "invoice\." got "charge\.succeeded"/);
      await expectText(page.locator(`a.req-row[data-id="${next.id}"] .badge.delivery`), 'filtered out');
    } finally {
      await worker.stop();
    }

    // deduplication: the API's 400 at the form, then saved
    await page.goto(`${t.base}/endpoints/${ep.id}/settings`);
    await page.getByRole('heading', { level: 2, name: 'Deduplication' }).waitFor(LONG);
    await page.getByLabel('Duplicates are recognised by').selectOption('body_path');
    await page.getByLabel('Window (seconds)').fill('0');
    await page.getByRole('button', { name: 'Save deduplication' }).click();
    await expectText(page.locator('#dedup-error'), /deduplication\.window_seconds.*1-3600/);
    assert.equal((await v1('GET', `/v1/endpoints/${ep.id}`)).data.deduplication, null);
    assert.deepEqual(await seriousA11yViolations(page), []);
    await page.getByLabel('Window (seconds)').fill('600');
    await page.getByLabel('Body path').fill('id');
    await page.getByRole('button', { name: 'Save deduplication' }).click();
    await page.locator('#dedup-heading ~ form').getByText('Saved.').waitFor(LONG);
    const dedup: DedupSettings = (await v1('GET', `/v1/endpoints/${ep.id}`)).data.deduplication;
    assert.deepEqual(dedup, { window_seconds: 600, key: { body_path: 'id' } });

    // two copies stored as the ingest listener stores them (its key digest, one capture statement each)
    const body = JSON.stringify({ type: 'invoice.paid', id: 'evt_dup' });
    const copy = () => ({ ...captureOf(ep, { path: '/dup', body }), dedup_key: dedupKeyHash(dedup, ['content-type', 'application/json'], Buffer.from(body)), dedup_window_seconds: 600 });
    const first = copy();
    const second = copy();
    assert.deepEqual([...(await storeCaptures(t.db, [first])), ...(await storeCaptures(t.db, [second]))], ['stored', 'stored']);
    await page.goto(`${t.base}/endpoints/${ep.id}`);
    await page.locator(`a.req-row[data-id="${second.id}"] [data-duplicate]`).waitFor(LONG);
    assert.equal(await page.locator(`a.req-row[data-id="${first.id}"] [data-duplicate]`).count(), 0);
    await page.getByText('Search and filter').click();
    await page.getByLabel('Duplicates').selectOption('true');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(/duplicate=true/);
    await page.locator(`a.req-row[data-id="${first.id}"]`).waitFor({ state: 'detached', ...LONG });
    await page.locator(`a.req-row[data-id="${second.id}"]`).click();
    await page.locator('.req-detail [data-duplicate]').waitFor(LONG);
    await expectText(page.locator('.forwards'), /a duplicate of an earlier capture/);
    assert.deepEqual(await seriousA11yViolations(page), []);
    await page.locator('.req-detail a[data-duplicate-of]').click();
    await page.waitForURL(new RegExp(`/requests/${first.id}`));
    await expectText(page.locator('.req-detail .req-target').first(), '/dup');
    assert.deepEqual(errors, []);
    await page.close();
  });
});
