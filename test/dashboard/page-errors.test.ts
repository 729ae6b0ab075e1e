import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchChromium, openDashboardPage } from '../helpers/browser.ts';

/**
 * The dashboard tests assert that `errors` stays empty; this shows the
 * recorder behind it catches each way a page can go wrong, so a page that
 * logs an error or fails a request fails its test.
 */
describe('the browser tests record what goes wrong on a page', () => {
  let browser: Browser;
  let server: Server;
  let base = '';
  let closedPort = 0;
  before(async () => {
    // a port nothing listens on: a request to it is refused
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    closedPort = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    browser = await launchChromium();
    server = createServer((req, res) => {
      if (req.url === '/missing') return void res.writeHead(404).end('{"error":{"code":"not_found"}}');
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>t</title><p>page</p>');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await browser?.close();
    await new Promise((r) => server?.close(r));
  });

  it('an uncaught error, a console.error and a failed request; not an API 4xx the page handles, nor a request it aborted', async () => {
    const { page, errors } = await openDashboardPage(browser);
    try {
      await page.goto(base + '/');
      await page.evaluate(`(async () => {
        console.error('something broke');
        setTimeout(() => { throw new Error('uncaught'); });
        await fetch('/missing');                                   // a 4xx the page shows: expected
        const aborted = new AbortController();
        const pending = fetch('/slow', { signal: aborted.signal }).catch(() => {});
        aborted.abort();                                           // the page's own choice: not an error
        await pending;
        await fetch('http://127.0.0.1:${closedPort}/').catch(() => {}); // refused: an error
      })()`);
      const refused = `request failed: GET http://127.0.0.1:${closedPort}/: net::ERR_CONNECTION_REFUSED`;
      for (const deadline = Date.now() + 10_000; !(errors.includes('uncaught') && errors.includes(refused)) && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(errors.includes('console.error: something broke'), errors.join('\n'));
      assert.ok(errors.includes('uncaught'), errors.join('\n'));
      assert.ok(errors.includes(refused), errors.join('\n'));
      // the page's own 4xx and its own abort are not errors (Chromium's console line for the refusal may also be there)
      assert.deepEqual(errors.filter((e) => /missing|slow|status of 404/.test(e)), [], errors.join('\n'));
    } finally {
      await page.close();
    }
  });
});
