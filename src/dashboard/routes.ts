import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

const PUBLIC_DIR = new URL('./public/', import.meta.url);

const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/incidents.js': { file: 'incidents.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/agents.js': { file: 'agents.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/subscriptions.js': { file: 'subscriptions.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/tail.js': { file: 'tail.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

// The page talks only to this origin and runs only its own script: a strict
// CSP means a captured body that smuggles HTML can never execute here.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The web dashboard: static assets read once at start, a client of /v1 with the user's API key. */
export function dashboardRoutes(app: FastifyInstance): void {
  // Browsers ask for it on every page load; an empty answer keeps the console clean.
  app.get('/favicon.ico', async (_request, reply) => reply.status(204).send());
  for (const [path, asset] of Object.entries(ASSETS)) {
    const body = readFileSync(new URL(asset.file, PUBLIC_DIR));
    app.get(path, async (_request, reply) =>
      reply
        .header('content-type', asset.type)
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-cache')
        .send(body),
    );
  }
}
