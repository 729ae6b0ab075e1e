import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';

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
