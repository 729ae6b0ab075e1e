import { after, before } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { useTestApp, type UsedTestApp } from './app.ts';

/** Debian's chromium, headless, quiet (no background network, no updates). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
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
