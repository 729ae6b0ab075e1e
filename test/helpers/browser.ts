import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { useTestApp, type UsedTestApp } from './app.ts';

/**
 * Debian's chromium, headless, quiet (no background network, no updates).
 *
 * With WEIR_TEST_SLOW_API_MS=N every API request the pages make is held N ms
 * before it goes out: a slow server on demand, which shows a test that reads
 * the page before its fetches have answered (`npm run test:dashboard-slow`).
 */
export async function launchChromium(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const delay = Number(process.env.WEIR_TEST_SLOW_API_MS ?? 0);
  if (delay > 0) {
    // browser.newPage() makes its context through browser.newContext(), so this covers both
    const newContext = browser.newContext.bind(browser);
    browser.newContext = async (options) => {
      const context = await newContext(options);
      await context.route(/\/v1\//, async (route) => {
        await new Promise((resolve) => setTimeout(resolve, delay));
        await route.continue().catch(() => {}); // the page may have gone meanwhile
      });
      return context;
    };
  }
  return browser;
}

/**
 * The real API app listening on a real loopback port, and a browser, for
 * the enclosing describe() of a dashboard test (the database is not reset
 * between its tests). `base` and `browser` are valid once `before` has run.
 */
export function useDashboard(): UsedTestApp & { readonly base: string; readonly browser: Browser } {
  const t = useTestApp({}, { reset: false });
  let browser: Browser | undefined;
  let base = '';
  before(async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });
  return Object.defineProperties(t, {
    base: { get: () => base },
    browser: {
      get: () => {
        if (!browser) throw new Error('useDashboard(): used before its before() hook ran');
        return browser;
      },
    },
  }) as UsedTestApp & { base: string; browser: Browser };
}

/**
 * What a page may log as an error without the page being wrong: Chromium's
 * own line for an API answer of 4xx, which the dashboard shows to the user
 * as the API's message (a refused form, a signed-out key).
 */
const EXPECTED_CONSOLE_ERROR = /^Failed to load resource: the server responded with a status of 4\d\d\b/;

/**
 * Records into `errors`, for the test to assert empty, everything that says
 * a page went wrong: an uncaught error, a console.error (a CSP refusal is
 * one), and a request that failed (network error, refused, blocked); not a
 * request the page itself aborted (a stream it closed, a navigation).
 */
export function recordPageErrors(page: Page, errors: string[]): void {
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !EXPECTED_CONSOLE_ERROR.test(m.text())) errors.push(`console.error: ${m.text()}`);
  });
  page.on('requestfailed', (r) => {
    const why = r.failure()?.errorText ?? 'failed';
    if (why !== 'net::ERR_ABORTED') errors.push(`request failed: ${r.method()} ${r.url()}: ${why}`);
  });
}

/** A page of the dashboard that records uncaught errors, console errors and failed requests (recordPageErrors) for the test to assert empty. */
export async function openDashboardPage(browser: Browser, opts: { width?: number; height?: number } = {}): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 } });
  const errors: string[] = [];
  recordPageErrors(page, errors);
  return { page, errors };
}

/** Signs in at `base` with `key` through the sign-in form and waits for the navigation. */
export async function signIn(page: Page, base: string, key: string, path = '/'): Promise<void> {
  await page.goto(base + path);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's WCAG 2 A/AA rules on what the page shows now; answers the
 * serious and critical violations (id and the first offending element), for
 * the test to assert empty. page.evaluate is not subject to the page's CSP.
 */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  // a string, not a function: this runs in the page, whose globals (document, axe) TypeScript does not know here
  const results = await page.evaluate<Array<{ id: string; impact: string; target: string }>>(`(async () => {
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, target: JSON.stringify(v.nodes[0]?.target ?? []) }));
  })()`);
  return results.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} at ${v.target}`);
}

/** How many CSS pixels the document is wider than the viewport (0 when nothing scrolls sideways). */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
}

/**
 * Waits until the focused element's text is `text` (and it sits inside
 * `within`, when given). The predicate is a function, never a string: while
 * Playwright polls, a string predicate is evaluated with eval() in the page,
 * which the dashboard's CSP refuses (the wait then failed whenever the focus
 * had not yet moved at its first check).
 */
export async function waitForFocus(page: Page, text: string, opts: { within?: string; timeout?: number } = {}): Promise<void> {
  type Focused = { textContent: string | null; closest(selector: string): unknown } | null;
  await page.waitForFunction(
    ({ want, within }) => {
      const el = (globalThis as unknown as { document: { activeElement: Focused } }).document.activeElement;
      return el?.textContent === want && (within === '' || el.closest(within) !== null);
    },
    { want: text, within: opts.within ?? '' },
    { timeout: opts.timeout },
  );
}

/**
 * Waits until `locator`'s text matches `want` (a pattern, or the exact text)
 * and answers it; when it never does, fails with the text it last had. Every
 * read of what a page shows goes through this: the page renders after its
 * fetches answer, and a single read right after an action races them (CI
 * once read "Loading…" where the empty list was about to appear).
 */
export async function expectText(locator: Locator, want: RegExp | string, message?: string, timeout = 20_000): Promise<string> {
  const deadline = Date.now() + timeout;
  const matches = (text: string) => (typeof want === 'string' ? text === want : want.test(text));
  let text = await locator.innerText({ timeout });
  while (!matches(text) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    text = await locator.innerText({ timeout: Math.max(1, deadline - Date.now()) });
  }
  if (typeof want === 'string') assert.equal(text, want, message);
  else assert.match(text, want, message);
  return text;
}
