import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { addMemberWithKey, seedOrg, type Seeded } from '../helpers/app.ts';
import { expectText, horizontalOverflow, openDashboardPage, seriousA11yViolations, signIn, useDashboard } from '../helpers/browser.ts';
import { focused } from '../helpers/dashboard-keyboard.ts';
import { insertCaptures, insertEndpoint } from '../helpers/fixtures.ts';

const LONG = { timeout: 20_000 };
const row = (page: Page, id: string) => page.locator(`a.req-row[data-id="${id}"]`);

/** The Requests tab in a real browser: the live list, paging, filters in the URL, deep links, and the forwards panel. */
describe('dashboard: an endpoint\'s requests', () => {
  const t = useDashboard();
  let s: Seeded;
  before(async () => {
    s = await seedOrg(t.db);
  });

  async function checkView(page: Page, what: string): Promise<void> {
    assert.deepEqual(await seriousA11yViolations(page), [], `axe on ${what}`);
    assert.equal(await horizontalOverflow(page), 0, `no sideways scrolling on ${what}`);
  }

  it('shows a capture as it arrives, at the top, without re-reading the list (the live tail, key in a header)', async () => {
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'live-list' });
    const [old] = await insertCaptures(t.db, ep, [{ method: 'PUT' }]);
    const { page, errors } = await openDashboardPage(t.browser);
    const listReads: string[] = [];
    const streams: Array<string | undefined> = [];
    page.on('request', (r) => {
      if (/\/requests\?limit=50$/.test(r.url())) listReads.push(r.url());
      if (r.url().endsWith('/requests/stream')) streams.push(r.headers()['authorization']);
    });
    await signIn(page, t.base, s.key);
    await page.getByRole('link', { name: 'live-list' }).click();
    await row(page, old.id).waitFor(LONG);
    await page.locator('#tail-state', { hasText: 'live' }).waitFor(LONG);

    const [fresh] = await insertCaptures(t.db, ep, [{ method: 'PATCH', path: '/arrived' }]);
    await row(page, fresh.id).waitFor(LONG);
    assert.equal(await page.locator('a.req-row').first().getAttribute('data-id'), fresh.id);
    await expectText(page.locator('a.req-row').first(), /PATCH\s+\/arrived/);
    assert.equal(await page.locator('a.req-row').count(), 2);
    assert.equal(listReads.length, 1, 'the list was read once; the stream brought the rest');
    assert.deepEqual(streams, [`Bearer ${s.key}`], 'the key travels in a header, never in the URL');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('"Older requests" pages back without stopping the live list', async () => {
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'paged' });
    const made = await insertCaptures(t.db, ep, Array.from({ length: 60 }, (_, i) => ({ path: `/n/${i}` })));
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}`);
    await row(page, made[59].id).waitFor(LONG);
    await page.locator('#tail-state', { hasText: 'live' }).waitFor(LONG);
    assert.equal(await page.locator('a.req-row').count(), 50);
    await page.getByRole('button', { name: 'Older requests' }).click();
    await row(page, made[0].id).waitFor(LONG);
    assert.equal(await page.locator('a.req-row').count(), 60);
    assert.equal(await page.getByRole('button', { name: 'Older requests' }).count(), 0, 'nothing older left');
    const [fresh] = await insertCaptures(t.db, ep, [{ path: '/after-older' }]);
    await row(page, fresh.id).waitFor(LONG);
    assert.equal(await page.locator('a.req-row').first().getAttribute('data-id'), fresh.id);
    assert.equal(await page.locator('a.req-row').last().getAttribute('data-id'), made[0].id);
    assert.equal(await page.locator('a.req-row').count(), 61);
    await expectText(page.locator('#tail-state'), /live/);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('filters by method and text through the URL (kept on reload), and the live list honours them', async () => {
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'filtered' });
    const [put, post, needle] = await insertCaptures(t.db, ep, [
      { method: 'PUT', path: '/p' },
      { method: 'POST', path: '/q' },
      { method: 'POST', path: '/r', body: '{"secret":"needle-in-body"}' },
    ]);
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}`);
    await row(page, put.id).waitFor(LONG);

    assert.equal(await page.getByLabel('Method').isVisible(), false, 'folded until used');
    await page.getByText('Search and filter').click();
    await page.getByLabel('Method').selectOption('PUT');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(/\?method=PUT$/);
    await page.locator('#tail-state', { hasText: 'live' }).waitFor(LONG);
    assert.deepEqual(await page.locator('a.req-row').evaluateAll((els) => els.map((e) => e.getAttribute('data-id'))), [put.id]);
    const [livePost, livePut] = await insertCaptures(t.db, ep, [{ method: 'POST', path: '/live-post' }, { method: 'PUT', path: '/live-put' }]);
    await row(page, livePut.id).waitFor(LONG);
    assert.equal(await row(page, livePost.id).count(), 0, 'a live POST does not pass method=PUT');
    await checkView(page, 'a filtered list');

    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Search').fill('needle-in-body');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(/\?q=needle-in-body$/);
    await row(page, needle.id).waitFor(LONG);
    assert.equal(await page.locator('a.req-row').count(), 1);
    await page.reload();
    await row(page, needle.id).waitFor(LONG);
    assert.equal(await page.getByLabel('Search').inputValue(), 'needle-in-body', 'the filter is in the URL');
    await page.locator('#tail-state', { hasText: 'live' }).waitFor(LONG);
    const [hit, miss] = await insertCaptures(t.db, ep, [{ path: '/hit', body: 'xx needle-in-body xx' }, { path: '/miss', body: 'nothing' }]);
    await row(page, hit.id).waitFor(LONG);
    assert.equal(await row(page, miss.id).count(), 0, 'the text search looks in the body of live captures too');
    assert.equal(await row(page, post.id).count(), 0);

    // a filtered request keeps its filters when one is opened
    await row(page, hit.id).click();
    await page.waitForURL(new RegExp(`/requests/${hit.id}\\?q=needle-in-body$`));
    await page.getByLabel('Method').selectOption('GET');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.getByText('No requests match these filters.').waitFor(LONG);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('opens a request from a deep link (reload lands on the same view), marks its row, and tells a request of another endpoint', async () => {
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'deep' });
    const other = await insertEndpoint(t.db, s.org.id, { name: 'deep 2' });
    const rows = await insertCaptures(t.db, ep, Array.from({ length: 40 }, (_, i) => ({ path: `/d/${i}`, body: `<?xml version="1.0"?><order id="${i}"><item sku="A">two &amp; three</item><empty/></order>`, headers: [['Content-Type', 'application/xml']] })));
    const [foreign] = await insertCaptures(t.db, other, [{ path: '/elsewhere' }]);
    const target = rows[3];
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}/requests/${target.id}`);
    for (let pass = 0; pass < 2; pass++) {
      await page.locator('#request-heading').waitFor(LONG);
      await expectText(page.locator('#request-heading'), /POST\s+\/d\/3/);
      assert.equal(await row(page, target.id).getAttribute('aria-current'), 'page');
      assert.equal(await page.locator('a.req-row[aria-current]').count(), 1);
      assert.equal((await focused(page)).id, 'request-heading');
      assert.equal(
        await page.getByLabel('Body as indented XML').innerText(),
        '<?xml version="1.0"?>\n<order id="3">\n  <item sku="A">two &amp; three</item>\n  <empty/>\n</order>',
      );
      if (pass === 0) await page.reload();
    }
    await checkView(page, 'an XML request');
    await page.goto(`${t.base}/endpoints/${ep.id}/requests/${foreign.id}`);
    await page.getByText('This request was captured on another endpoint.').waitFor(LONG);
    await page.getByRole('link', { name: 'Open it there' }).click();
    await page.waitForURL(new RegExp(`/endpoints/${other.id}/requests/${foreign.id}$`));
    await row(page, foreign.id).waitFor(LONG);
    assert.equal(await row(page, foreign.id).getAttribute('aria-current'), 'page');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('offers a viewer no create, pause, delete, edit or replay (the API would refuse them)', async () => {
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'viewed' });
    const [cap] = await insertCaptures(t.db, ep, [{ path: '/v', body: '{"v":1}' }]);
    const viewer = await addMemberWithKey(t.db, s.org.id, 'viewer');
    const { page, errors } = await openDashboardPage(t.browser);
    await signIn(page, t.base, viewer.key, '/endpoints');
    await page.getByRole('link', { name: 'viewed' }).waitFor(LONG);
    assert.equal(await page.getByRole('button', { name: 'Create endpoint' }).count(), 0);
    await expectText(page.locator('main'), /Each endpoint has an ingest URL/);
    await page.goto(`${t.base}/endpoints/${ep.id}/requests/${cap.id}`);
    await page.locator('#request-heading').waitFor(LONG);
    for (const name of ['Pause', 'Delete', 'Replay']) assert.equal(await page.getByRole('button', { name, exact: true }).count(), 0, name);
    assert.equal(await page.getByRole('button', { name: 'Copy as curl' }).count(), 1, 'reading is allowed');
    await page.getByRole('navigation', { name: 'Endpoint' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByText('Your key cannot edit endpoints').waitFor(LONG);
    assert.equal(await page.getByLabel('Name').isDisabled(), true);
    await checkView(page, 'settings for a viewer');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('refreshes the forwards of a request until every one is final, then stops', async () => {
    const ep = await insertEndpoint(t.db, s.org.id, { name: 'forwarding', forwardUrl: 'https://receiver.example/hook' });
    const [cap] = await insertCaptures(t.db, ep, [{ path: '/fw', body: '{}' }]);
    const { page, errors } = await openDashboardPage(t.browser);
    let forwardReads = 0;
    page.on('request', (r) => {
      if (r.url().includes(`/requests/${cap.id}/forwards`)) forwardReads++;
    });
    await signIn(page, t.base, s.key, `/endpoints/${ep.id}/requests/${cap.id}`);
    const forwards = page.locator('.forwards');
    await forwards.locator('.forward', { hasText: 'pending' }).waitFor(LONG);
    await expectText(forwards, /refreshing until all are final/);
    await expectText(forwards, /forward_url → https:\/\/receiver\.example\/hook/);
    await t.db.query(`update deliveries set status = 'succeeded', attempt_count = 1 where request_id = $1::uuid`, [cap.id]);
    await forwards.locator('.forward', { hasText: 'succeeded' }).waitFor(LONG);
    assert.doesNotMatch(await forwards.innerText(), /refreshing/);
    const reads = forwardReads;
    await page.waitForTimeout(5000);
    assert.equal(forwardReads, reads, 'no more reads once every forward is final');
    assert.deepEqual(errors, []);
    await page.close();
  });
});

/** The capture-view functions in Node: curl commands run through bash and a real curl against a local server, compared byte for byte. */
describe('copy as curl, byte for byte', () => {
  let server: Server;
  let port: number;
  const got: Array<{ method: string; url: string; raw: string[]; body: Buffer }> = [];
  let cv: any;

  before(async () => {
    cv = await import(new URL('../../src/dashboard/public/lib/capture-view.js', import.meta.url).href);
    server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        got.push({ method: req.method!, url: req.url!, raw: req.rawHeaders, body: Buffer.concat(chunks) });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const run = (command: string) =>
    new Promise<void>((resolve, reject) => execFile('bash', ['-c', command + ' --silent --output /dev/null'], (err) => (err ? reject(err) : resolve())));

  function capture(method: string, headers: Array<[string, string]>, body: Buffer) {
    let text: string | null = null;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body);
    } catch {
      text = null;
    }
    return {
      method,
      path: '/p%20x/y',
      query: 'a=1&b=%27',
      headers: headers.map(([name, value]) => ({ name, value })),
      body: text ?? body.toString('base64'),
      body_encoding: text === null ? 'base64' : 'utf8',
      body_size: body.length,
    };
  }

  const pairs = (raw: string[]) => {
    const out: string[] = [];
    for (let i = 0; i < raw.length; i += 2) if (!['host', 'content-length'].includes(raw[i].toLowerCase())) out.push(`${raw[i]}: ${raw[i + 1]}`);
    return out;
  };

  const cases: Array<[string, string, Array<[string, string]>, Buffer]> = [
    ['JSON with quotes and newlines', 'POST', [['Content-Type', 'application/json'], ['X-Quote', `it's "quoted" $HOME \`x\``]], Buffer.from(`{"a":"it's","b":"line\\n"}\n{"c":1}`)],
    ['a body starting with @ (not a file)', 'POST', [['Content-Type', 'text/plain']], Buffer.from('@/etc/passwd')],
    ['binary without NUL, a CR, Latin-1 and empty header values, duplicates', 'PUT', [['X-Latin', 'caf\u00e9'], ['X-Empty', ''], ['X-Dup', '1'], ['x-dup', '2']], Buffer.from([0xff, 0xfe, 0x27, 0x5c, 0x0d, 0x0a, 0x24, 0x80])],
    ['GET without a body', 'GET', [['Accept', 'application/json'], ['User-Agent', 'Stripe/1.0']], Buffer.alloc(0)],
    ['DELETE with a body and no content type', 'DELETE', [], Buffer.from('x=1')],
  ];

  for (const [name, method, headers, body] of cases) {
    it(`reproduces ${name}`, async () => {
      const c = capture(method, headers, body);
      const { command, file } = cv.curlCommand(c, `http://127.0.0.1:${port}${c.path}?${c.query}`);
      assert.equal(file, null);
      got.length = 0;
      await run(command);
      assert.equal(got.length, 1);
      assert.equal(got[0].method, method);
      assert.equal(got[0].url, '/p%20x/y?a=1&b=%27');
      assert.deepEqual(got[0].body, body);
      const expected = headers.map(([n, v]) => `${n}: ${v}`);
      assert.deepEqual(pairs(got[0].raw), expected, 'exactly the captured headers, in order, nothing added');
    });
  }

  it('reads a body with NUL bytes from the downloaded file instead', () => {
    const c = capture('POST', [['Content-Type', 'application/octet-stream']], Buffer.from([1, 0, 2]));
    const { command, file } = cv.curlCommand(c, 'http://x.example/', { fileName: 'request-1.bin' });
    assert.equal(file, 'request-1.bin');
    assert.match(command, /--data-binary '@request-1\.bin'$/);
  });

  it('indents JSON keeping every token as sent, decodes forms, and dumps hex', () => {
    assert.equal(cv.indentJson('{"a":[1,{"b":1.10}],"c":{},"d":"{,:}","e":12345678901234567890}'), '{\n  "a": [\n    1,\n    {\n      "b": 1.10\n    }\n  ],\n  "c": {},\n  "d": "{,:}",\n  "e": 12345678901234567890\n}');
    assert.equal(cv.indentJson('{"a":'), null);
    assert.deepEqual(cv.formFields('a=1+2&a=%26&b='), [{ name: 'a', value: '1 2' }, { name: 'a', value: '&' }, { name: 'b', value: '' }]);
    assert.equal(cv.hexDump(new Uint8Array([0x41, 0, 0xff])), '00000000  41 00 ff ' + '   '.repeat(5) + ' ' + '   '.repeat(8) + ' |A..|');
  });
});
