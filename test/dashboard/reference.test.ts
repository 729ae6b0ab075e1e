import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REFERENCE_CSP } from '../../src/http/openapi.ts';
import { openDashboardPage, useDashboard } from '../helpers/browser.ts';

// Issue 23, defect 5: /reference shares its origin with the dashboard (which
// keeps the API key in localStorage) and had no security headers. In a real
// Chromium: the page still works under its CSP, breaks none of it, and
// cannot be framed.

describe('/reference in a browser', () => {
  const t = useDashboard();

  it('sends a CSP with frame-ancestors none, nosniff and no-referrer on the page and its assets', async () => {
    for (const url of ['/reference', '/reference/', '/reference/static/swagger-ui-bundle.js', '/reference/static/swagger-initializer.js']) {
      const res = await fetch(t.base + url, { redirect: 'manual' });
      assert.equal(res.headers.get('content-security-policy'), REFERENCE_CSP, url);
      assert.match(REFERENCE_CSP, /frame-ancestors 'none'/);
      assert.doesNotMatch(REFERENCE_CSP, /script-src[^;]*'unsafe-inline'/);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', url);
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer', url);
      await res.body?.cancel();
    }
  });

  it('renders every operation under its CSP, with no violation reported', async () => {
    const { page, errors } = await openDashboardPage(t.browser);
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    await page.exposeFunction('reportViolation', (v: string) => violations.push(v));
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => window.reportViolation(e.violatedDirective + ' ' + e.blockedURI))",
    );
    try {
      await page.goto(`${t.base}/reference/`);
      await page.locator('.opblock').first().waitFor({ timeout: 120_000 });
      assert.ok((await page.locator('.opblock').count()) > 20, 'the operations are listed');
      // open one operation: its description and schema render too
      await page.locator('.opblock-summary').first().click();
      await page.locator('.opblock-body').first().waitFor({ timeout: 60_000 });
      assert.deepEqual(violations, []);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  it('refuses to be framed by another page', async () => {
    const { page } = await openDashboardPage(t.browser);
    try {
      // a page of another origin (a data: URL is opaque) framing the reference
      await page.goto(`data:text/html,<iframe src="${t.base}/reference/"></iframe>`, { timeout: 60_000 });
      const frame = page.frames().find((f) => f !== page.mainFrame());
      assert.ok(frame, 'the iframe exists');
      await frame.waitForLoadState('load', { timeout: 60_000 }).catch(() => {});
      // served without frame-ancestors, the page's HTML (with #swagger-ui) would be in the frame by its load
      assert.equal(await frame.locator('#swagger-ui').count(), 0, 'the reference did not render inside the frame');
    } finally {
      await page.close();
    }
  });
});
