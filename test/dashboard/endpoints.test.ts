import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expectText, horizontalOverflow, launchChromium, recordPageErrors, seriousA11yViolations, waitForFocus } from '../helpers/browser.ts';
import { focused, tabTo } from '../helpers/dashboard-keyboard.ts';
import { startReceiver, testCa, type Receiver } from '../helpers/https.ts';
import { freshStore, http, startWeirProcess, type Store, type WeirProcess } from '../helpers/weir-process.ts';

const ADMIN = 'dashboard-endpoints-admin-token';
const LONG = { timeout: 20_000 };

/**
 * The endpoints pages end to end against a real `weir serve`: captures are
 * real HTTP requests to its ingest listener, forwards go to a real HTTPS
 * receiver, and every UI action is checked against the API afterwards.
 */
describe('dashboard: endpoints, end to end', () => {
  let store: Store;
  let weir: WeirProcess;
  let rx: Receiver;
  let browser: Browser;
  let key: string;

  before(async () => {
    store = await freshStore();
    rx = await startReceiver();
    // WEIR_PLANS set (even to {}): the first organization starts on free, whose endpoint limit a test shows
    weir = await startWeirProcess({ ...store.env, WEIR_ADMIN_TOKEN: ADMIN, WEIR_ALLOW_PRIVATE_DESTINATIONS: '1', NODE_EXTRA_CA_CERTS: testCa().caFile, WEIR_PLANS: '{}' });
    key = weir.bootstrapKey!;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await weir?.stop('SIGKILL');
    await rx?.close();
    await store?.drop();
  });

  const api = (method: string, path: string, body?: unknown, token = key) => http(weir.base, method, '/v1' + path, { token, body });

  /** A signed-in page in a context that may read the clipboard; errors collects what says the page went wrong (recordPageErrors). */
  async function open(width = 1280, height = 900, token = key): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width, height }, permissions: ['clipboard-read', 'clipboard-write'] });
    const page = await context.newPage();
    const errors: string[] = [];
    recordPageErrors(page, errors);
    await page.goto(weir.base + '/');
    await page.getByLabel('API key').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor(LONG);
    return { page, context, errors };
  }

  /** A real HTTP request to the ingest listener (node:http, so header values may carry Latin-1 bytes and repeat). */
  function ingest(slug: string, path: string, opts: { method?: string; headers?: Record<string, string | string[]>; body?: Buffer | string } = {}): Promise<{ status: number; json: any }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`http://127.0.0.1:${weir.ingestPort}/h/${slug}${path}`, { method: opts.method ?? 'POST', headers: opts.headers }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : null }));
      });
      req.on('error', reject);
      req.end(opts.body);
    });
  }

  async function bodyOf(requestId: string): Promise<Buffer> {
    const res = await fetch(`${weir.base}/v1/requests/${requestId}/body`, { headers: { authorization: `Bearer ${key}` } });
    return Buffer.from(await res.arrayBuffer());
  }

  const row = (page: Page, id: string) => page.locator(`a.req-row[data-id="${id}"]`);

  async function checkView(page: Page, what: string): Promise<void> {
    assert.deepEqual(await seriousA11yViolations(page), [], `axe on ${what}`);
    assert.equal(await horizontalOverflow(page), 0, `no sideways scrolling on ${what}`);
  }

  describe('the main flow', () => {
    let page: Page;
    let errors: string[];
    let endpointId: string;
    let slug: string;
    const captures: Record<string, string> = {};
    const JSON_BODY = '{"order":{"id":12345678901234567890,"total":10.50,"tags":[]},"items":[1,2],"note":"<b>hi</b>"}';
    const FORM_BODY = 'name=Ada+Lovelace&tag=a&tag=b&note=%3Cscript%3Ex%3C%2Fscript%3E';
    const BINARY = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff, 0x27, 0x5c, 0x0a]);
    const NO_NUL = Buffer.from([0xff, 0xfe, 0x27, 0x5c, 0x0a, 0x41, 0x22, 0x24, 0x60, 0x0d, 0x80]);

    before(async () => {
      ({ page, errors } = await open());
    });
    after(async () => {
      await page?.context().close();
    });

    it('shows a new user what to do, refuses a non-https forward URL at the form, and creates an endpoint (names stay text)', async () => {
      await expectText(page.locator('main'), /No endpoints yet/);
      await checkView(page, 'the empty endpoints list');
      await page.getByLabel('Name').fill('Stripe <b>test</b>');
      await page.getByLabel('Forward URL (optional)').fill('http://insecure.example/hook');
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      await page.locator('#create-endpoint-error').waitFor(LONG);
      await expectText(page.locator('#create-endpoint-error'), /https:\/\//);
      assert.equal((await api('GET', '/endpoints')).json.data.length, 0, 'nothing was created');

      await page.getByLabel('Forward URL (optional)').fill('');
      await page.getByLabel('Description (optional)').fill('payments sandbox');
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      await page.waitForURL(/\/endpoints\/[0-9a-f-]{36}$/, LONG);
      endpointId = page.url().split('/').pop()!;
      const ep = (await api('GET', `/endpoints/${endpointId}`)).json.data;
      assert.equal(ep.name, 'Stripe <b>test</b>');
      assert.equal(ep.description, 'payments sandbox');
      assert.equal(ep.forward_url, null);
      slug = ep.slug;
      await page.getByRole('heading', { level: 1, name: 'Stripe <b>test</b>' }).waitFor(LONG);
      assert.equal(await page.locator('main b').count(), 0, 'the name is text, not markup');
      await expectText(page.locator('.endpoint-props'), new RegExp(`/h/${slug}`));
      await page.locator('#tail-state', { hasText: 'live' }).waitFor(LONG);
      await expectText(page.locator('main'), /No requests yet/);
      await checkView(page, 'an endpoint without requests');
    });

    it('copies the ingest URL with feedback', async () => {
      await page.getByRole('button', { name: 'Copy ingest URL' }).click();
      await page.getByText('Copied').first().waitFor();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), `http://127.0.0.1:${weir.ingestPort}/h/${slug}`);
    });

    it('shows JSON, form and binary captures sent over HTTP as they arrive, newest at the top', async () => {
      const sent: Array<[string, Parameters<typeof ingest>[2]]> = [
        ['json', { headers: { 'content-type': 'application/json', 'x-dup': ['one', 'two'] }, body: JSON_BODY }],
        ['form', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: FORM_BODY }],
        ['binary', { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: BINARY }],
        ['nonul', { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'x-latin': 'caf\u00e9', 'x-empty': '' }, body: NO_NUL }],
        ['empty', { method: 'DELETE', headers: {} }],
      ];
      for (const [name, opts] of sent) {
        const r = await ingest(slug, `/${name}?a=1&b=%20x`, opts);
        assert.equal(r.status, 200);
        captures[name] = r.json.request_id;
        await row(page, captures[name]).waitFor(LONG);
      }
      const ids = await page.locator('a.req-row').evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));
      assert.deepEqual(ids, [captures.empty, captures.nonul, captures.binary, captures.form, captures.json]);
      await expectText(row(page, captures.json), /POST\s+\/json\?a=1&b=%20x/);
      await checkView(page, 'the live list');
    });

    it('opens JSON indented (numbers as sent), beside the list, with headers in order and duplicates, and marks only its row', async () => {
      await row(page, captures.json).click();
      await page.waitForURL(new RegExp(`/endpoints/${endpointId}/requests/${captures.json}$`));
      const detail = page.locator('.req-detail');
      await detail.getByRole('heading', { level: 2 }).waitFor();
      assert.deepEqual(await focused(page).then((f) => f.id), 'request-heading', 'the detail takes the focus');
      assert.equal(await row(page, captures.json).getAttribute('aria-current'), 'page');
      assert.equal(await page.locator('a.req-row[aria-current]').count(), 1);
      const listBox = (await page.locator('.req-list').boundingBox())!;
      const detailBox = (await detail.boundingBox())!;
      assert.ok(detailBox.x > listBox.x + listBox.width - 1, 'split view: the detail is beside the list');
      assert.ok(detailBox.y < 900, 'the detail is on screen');
      const pretty = await detail.getByLabel('Body as indented JSON').innerText();
      assert.match(pretty, /^\{\n {2}"order": \{\n {4}"id": 12345678901234567890,\n {4}"total": 10\.50,\n {4}"tags": \[\]\n {2}\},/);
      const text = await detail.innerText();
      assert.match(text, /Source IP\s+127\.0\.0\.1/);
      assert.match(text, /Content type\s+application\/json/);
      const headerNames = await detail.locator('.headers-table tbody tr td:first-child').allInnerTexts();
      assert.deepEqual(headerNames.filter((n) => n === 'x-dup' || n === 'X-Dup').length, 2, 'duplicate headers kept');
      const values = await detail.locator('.headers-table tbody tr').allInnerTexts();
      assert.ok(values.findIndex((v) => /one/.test(v)) < values.findIndex((v) => /two/.test(v)), 'in order');
      await detail.getByRole('button', { name: 'Raw' }).click();
      await expectText(detail.getByLabel('Raw body'), JSON_BODY);
      await checkView(page, 'a JSON request');
    });

    it('decodes form fields, shows binary as a hex dump of the exact bytes, and says "No body" for none', async () => {
      await row(page, captures.form).click();
      const detail = page.locator('.req-detail');
      await detail.locator('.form-table').waitFor(LONG);
      const rows = await detail.locator('.form-table tbody tr').allInnerTexts();
      assert.deepEqual(rows.map((r) => r.replace(/\s+/g, ' ').trim()), ['name Ada Lovelace', 'tag a', 'tag b', 'note <script>x</script>']);
      assert.equal(await page.locator('main script').count(), 0);

      await row(page, captures.binary).click();
      await detail.getByLabel('Body as hex').waitFor(LONG);
      await expectText(detail.getByLabel('Body as hex'), /^00000000 {2}89 50 4e 47 00 01 ff 27 {2}5c 0a .*\|\.PNG\.\.\.'\\\.\|$/);
      assert.equal(await detail.getByRole('button', { name: 'Hex' }).getAttribute('aria-pressed'), 'true');
      await detail.getByRole('button', { name: 'Raw' }).click();
      await expectText(detail, /Binary body \(10 bytes/);
      await checkView(page, 'a binary request');

      await row(page, captures.empty).click();
      await detail.getByText('No body.').waitFor(LONG);
      assert.equal(await detail.locator('pre.body').count(), 0, 'no empty box');
    });

    it('copies as curl a command that reproduces the capture byte for byte (binary body, Latin-1 and empty headers)', async () => {
      await row(page, captures.nonul).click();
      const detail = page.locator('.req-detail');
      await detail.getByRole('button', { name: 'Copy as curl' }).click();
      await detail.getByText('Copied').waitFor();
      const command = await page.evaluate<string>('navigator.clipboard.readText()');
      assert.equal(command, await page.locator('#curl-command').innerText());
      assert.match(command, new RegExp(`^curl \\\\\n {2}-X 'PATCH' \\\\\n {2}'http://127\\.0\\.0\\.1:${weir.ingestPort}/h/${slug}/nonul\\?a=1&b=%20x'`));
      const out = await new Promise<string>((resolve, reject) =>
        execFile('bash', ['-c', command + ' --silent'], (err, stdout) => (err ? reject(err) : resolve(stdout))),
      );
      const again = JSON.parse(out).request_id as string;
      const [a, b] = [(await api('GET', `/requests/${captures.nonul}`)).json.data, (await api('GET', `/requests/${again}`)).json.data];
      assert.deepEqual(await bodyOf(again), NO_NUL);
      assert.equal(b.method, 'PATCH');
      assert.equal(b.path + '?' + b.query, a.path + '?' + a.query);
      const skip = new Set(['host', 'content-length', 'connection']);
      const headers = (c: { headers: Array<{ name: string; value: string }> }) => c.headers.filter((h) => !skip.has(h.name.toLowerCase())).map((h) => `${h.name.toLowerCase()}: ${h.value}`);
      assert.deepEqual(headers(b), headers(a), 'the same headers, in order, with the Latin-1 byte and the empty value');
      assert.ok(headers(a).includes('x-latin: caf\u00e9'));
      await row(page, again).waitFor(LONG);

      await row(page, captures.binary).click();
      const withNul = await page.locator('#curl-command').innerText();
      assert.match(withNul, new RegExp(`--data-binary '@request-${captures.binary}\\.bin'$`), 'a NUL byte cannot go in a shell word: the command reads the downloaded body');
      await expectText(detail, /download it with "Download body"/);
      const [download] = await Promise.all([page.waitForEvent('download'), detail.getByRole('button', { name: 'Download body' }).click()]);
      assert.equal(download.suggestedFilename(), `request-${captures.binary}.bin`);
      const path = await download.path();
      const { readFile } = await import('node:fs/promises');
      assert.deepEqual(await readFile(path), BINARY);
    });

    it('shows Replay\'s 400 where it was when there is nowhere to forward, then replays once the forward URL is set in Settings', async () => {
      await row(page, captures.json).click();
      const detail = page.locator('.req-detail');
      await detail.getByRole('button', { name: 'Replay' }).click();
      await page.locator('#replay-error').waitFor(LONG);
      await expectText(page.locator('#replay-error'), /no forward_url/);

      await page.getByRole('navigation', { name: 'Endpoint' }).getByRole('link', { name: 'Settings' }).click();
      await page.waitForURL(/\/settings$/);
      await page.getByLabel('Forward URL (optional)').fill('http://not-https.example');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.locator('#settings-error').waitFor(LONG);
      await expectText(page.locator('#settings-error'), /https:\/\//);
      await page.getByLabel('Forward URL (optional)').fill(`${rx.url}/hook`);
      await page.getByLabel('Name').fill('Stripe <b>test</b> renamed');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Saved.').waitFor(LONG);
      const ep = (await api('GET', `/endpoints/${endpointId}`)).json.data;
      assert.equal(ep.forward_url, `${rx.url}/hook`);
      assert.equal(ep.name, 'Stripe <b>test</b> renamed');
      await expectText(page.getByRole('heading', { level: 1 }), 'Stripe <b>test</b> renamed');
      await checkView(page, 'the settings tab');

      const tabs = page.getByRole('navigation', { name: 'Endpoint' });
      await tabs.getByRole('link', { name: 'Destinations' }).click();
      await page.waitForURL(/\/destinations$/);
      await checkView(page, 'the destinations tab');
      await tabs.getByRole('link', { name: 'Requests' }).click();
      await row(page, captures.json).click();
      await detail.getByRole('button', { name: 'Replay' }).click();
      await detail.getByText(/Queued 1 forward/).waitFor(LONG);
      const [got] = await rx.waitFor(1);
      assert.equal(got.body.toString(), JSON_BODY);
      await detail.locator('.forward', { hasText: 'succeeded' }).waitFor(LONG);
      assert.doesNotMatch(await detail.locator('#forwards-heading').innerText(), /refreshing/, 'final: no more refreshing');
    });

    it('pauses (ingest answers 423) and resumes', async () => {
      await page.getByRole('button', { name: 'Pause' }).click();
      await page.getByRole('button', { name: 'Resume' }).waitFor(LONG);
      await expectText(page.locator('.endpoint-props'), /paused/);
      assert.equal((await api('GET', `/endpoints/${endpointId}`)).json.data.paused, true);
      assert.equal((await ingest(slug, '/x', { body: 'x' })).status, 423);
      await page.getByRole('button', { name: 'Resume' }).click();
      await page.getByRole('button', { name: 'Pause' }).waitFor(LONG);
      assert.equal((await api('GET', `/endpoints/${endpointId}`)).json.data.paused, false);
      assert.equal((await ingest(slug, '/x', { body: 'x' })).status, 200);
    });

    it('deletes after asking, and goes back to the list', async () => {
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.waitForURL(/\/endpoints$/, LONG);
      assert.equal((await api('GET', `/endpoints/${endpointId}`)).status, 404);
      assert.equal((await ingest(slug, '/x', { body: 'x' })).status, 404);
      assert.deepEqual(errors, []);
    });
  });

  it('works with the keyboard alone: create, open a capture, pause, delete (Tab, Enter and Space only)', async () => {
    const { page, errors } = await open();
    await tabTo(page, 'Name');
    await page.keyboard.type('Keyboard hook');
    await tabTo(page, 'Create endpoint');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/endpoints\/[0-9a-f-]{36}$/, LONG);
    const id = page.url().split('/').pop()!;
    const { slug } = (await api('GET', `/endpoints/${id}`)).json.data;
    await page.locator('#tail-state', { hasText: 'live' }).waitFor(LONG);
    const sent = await ingest(slug, '/kb', { headers: { 'content-type': 'application/json' }, body: '{"k":1}' });
    await row(page, sent.json.request_id).waitFor(LONG);

    await tabTo(page, /^POST \/kb/);
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/requests/${sent.json.request_id}$`), LONG);
    await page.locator('#request-heading').waitFor();
    assert.equal((await focused(page)).id, 'request-heading', 'Enter on a row moves the focus to its detail');
    await tabTo(page, 'Raw');
    await page.keyboard.press('Space');
    await expectText(page.getByLabel('Raw body'), '{"k":1}');

    await tabTo(page, 'Pause', { back: true });
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Resume' }).waitFor(LONG);
    assert.equal((await api('GET', `/endpoints/${id}`)).json.data.paused, true);
    await tabTo(page, 'Delete');
    await page.keyboard.press('Enter');
    await waitForFocus(page, 'Delete endpoint', LONG); // the confirmation takes the focus
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/endpoints$/, LONG);
    assert.equal((await api('GET', `/endpoints/${id}`)).status, 404);
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  it('keeps "Stripe test" and "Stripe test 2" apart: each opens by id, and only its own requests and row are marked', async () => {
    const a = (await api('POST', '/endpoints', { name: 'Stripe test' })).json.data;
    const b = (await api('POST', '/endpoints', { name: 'Stripe test 2' })).json.data;
    const ra = (await ingest(a.slug, '/a', { body: 'a' })).json.request_id;
    const rb = (await ingest(b.slug, '/b', { body: 'b' })).json.request_id;
    const { page, errors } = await open();
    await page.getByRole('link', { name: 'Stripe test', exact: true }).click();
    await page.waitForURL(new RegExp(`/endpoints/${a.id}$`));
    await row(page, ra).waitFor(LONG);
    assert.equal(await row(page, rb).count(), 0);
    await row(page, ra).click();
    await page.locator('#request-heading').waitFor(LONG);
    assert.equal(await page.locator('[aria-current="page"]').filter({ hasText: 'Stripe test 2' }).count(), 0);
    assert.equal(await page.locator('a.req-row[aria-current="page"]').count(), 1);
    await page.getByRole('link', { name: 'Endpoints', exact: true }).first().click();
    await page.getByRole('link', { name: 'Stripe test 2', exact: true }).click();
    await page.waitForURL(new RegExp(`/endpoints/${b.id}$`));
    await row(page, rb).waitFor(LONG);
    assert.equal(await row(page, ra).count(), 0);
    assert.equal(await page.locator('a.req-row[aria-current]').count(), 0, 'nothing selected on B');
    await checkView(page, 'the endpoints list with endpoints');
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  it('returns to sign-in with the reason when the key is revoked while a page is open', async () => {
    const made = await api('POST', '/api-keys', { name: 'to revoke' });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    const ep = (await api('POST', '/endpoints', { name: 'revoked-case' })).json.data;
    const r = (await ingest(ep.slug, '/r', { body: 'r' })).json.request_id;
    const { page, errors } = await open(1280, 900, made.json.data.key);
    await page.goto(`${weir.base}/endpoints/${ep.id}`);
    await row(page, r).waitFor(LONG);
    const revoked = await fetch(`${weir.base}/admin/v1/api-keys/${made.json.data.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(revoked.status, 204);
    // a click on the list (the server may also have ended the live stream, which signs out by itself)
    await row(page, r).click({ timeout: 5000 }).catch(() => {});
    await page.getByRole('alert').filter({ hasText: 'no longer accepted' }).waitFor(LONG);
    assert.equal(await page.getByLabel('API key').count(), 1);
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  it("shows the plan's endpoint limit (429 plan_limit) at the form", async () => {
    const have = (await api('GET', '/endpoints')).json.data.length;
    const made: string[] = [];
    for (let i = have; i < 10; i++) made.push((await api('POST', '/endpoints', { name: `filler ${i}` })).json.data.id);
    const { page, errors } = await open();
    await page.getByLabel('Name').fill('one too many');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.locator('#create-endpoint-error').waitFor(LONG);
    await expectText(page.locator('#create-endpoint-error'), /free plan allows 10 endpoints/);
    assert.equal((await api('GET', '/endpoints')).json.data.length, 10);
    for (const id of made) await api('DELETE', `/endpoints/${id}`);
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  it('fits 360 px on the list, an endpoint, and a request opened in place (focused, on screen, the list hidden)', async () => {
    const ep = (await api('POST', '/endpoints', { name: 'a-rather-long-endpoint-name-that-has-to-wrap-on-a-phone' })).json.data;
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await ingest(ep.slug, `/narrow/${i}?q=${'x'.repeat(60)}`, { headers: { 'content-type': 'application/json' }, body: `{"i":${i}}` })).json.request_id);
    const { page, errors } = await open(360, 740);
    await checkView(page, 'the endpoints list at 360 px');
    await page.goto(`${weir.base}/endpoints/${ep.id}`);
    await row(page, ids[0]).waitFor(LONG);
    await checkView(page, 'an endpoint at 360 px');
    await row(page, ids[0]).scrollIntoViewIfNeeded();
    await row(page, ids[0]).click();
    await page.locator('#request-heading').waitFor(LONG);
    await page.locator('#request-heading:focus').waitFor(LONG); // the detail takes the focus in an effect, just after it renders
    assert.equal((await focused(page)).id, 'request-heading');
    const box = (await page.locator('#request-heading').boundingBox())!;
    assert.ok(box.y >= 0 && box.y < 740, `the detail heading is on screen (y = ${box.y})`);
    assert.equal(await page.locator('.req-list').isVisible(), false, 'in place of the list');
    await checkView(page, 'a request at 360 px');
    await page.getByRole('link', { name: '← All requests' }).click();
    await row(page, ids[0]).waitFor({ state: 'visible' });
    assert.deepEqual(errors, []);
    await page.context().close();
  });
});
