import type { FastifyInstance } from 'fastify';
import { after, before } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { useTestApp, type UsedTestApp } from './app.ts';

/** Debian's chromium, headless, for the dashboard tests. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Puts the app on a free loopback port; resolves with its base URL. */
export async function listenForBrowser(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

export interface BrowserTest {
  t: UsedTestApp;
  browser(): Browser;
  base(): string;
}

/** The real API on a real port and a browser for one test file (call inside describe). */
export function useBrowserApp(): BrowserTest {
  const t = useTestApp({}, { reset: false });
  let browser: Browser;
  let base: string;
  before(async () => {
    base = await listenForBrowser(t.app);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });
  return { t, browser: () => browser, base: () => base };
}
