import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seedOrg } from '../helpers/app.ts';
import { useDashboard } from '../helpers/browser.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';

/** The request list in a real browser follows the live tail (SSE read through fetch with the key header) instead of polling. */
describe('dashboard: live request list', () => {
  const t = useDashboard();

  it('shows a capture as it arrives, at the top, without re-reading the list', async () => {
    const s = await seedOrg(t.db);
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'live-list' });
    const [old] = await insertCaptures(t.db, ep, [{ method: 'PUT' }]);
    const page = await t.browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const listReads: string[] = [];
    const streams: Array<string | undefined> = [];
    page.on('request', (r) => {
      if (/\/requests\?limit=50$/.test(r.url())) listReads.push(r.url());
      if (r.url().endsWith('/requests/stream')) streams.push(r.headers()['authorization']);
    });
    await page.goto(t.base + '/');
    await page.fill('#key', s.key);
    await page.click('#signin-form button');
    await page.locator('#endpoints li', { hasText: 'live-list' }).click();
    await page.locator(`#requests tr[data-id="${old.id}"]`).waitFor();
    await page.locator('#tail-state', { hasText: 'live' }).waitFor();

    const [fresh] = await insertCaptures(t.db, ep, [{ method: 'PATCH', path: '/arrived' }]);
    await page.locator(`#requests tr[data-id="${fresh.id}"]`).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#requests tr').first().getAttribute('data-id'), fresh.id);
    assert.match(await page.locator('#requests tr').first().innerText(), /PATCH\s+\/arrived/);
    assert.equal(await page.locator('#requests tr').count(), 2);
    assert.equal(listReads.length, 1, 'the list was read once; the stream brought the rest');
    assert.deepEqual(streams, [`Bearer ${s.key}`], 'the key travels in a header, never in the URL');
    assert.deepEqual(errors, []);
    await page.close();
  });
});
