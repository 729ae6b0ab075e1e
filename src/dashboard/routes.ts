import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));

/**
 * The paths of the dashboard's pages (History API routes): each answers
 * index.html, so a link to an endpoint, a request or an incident can be
 * opened, shared and reloaded. Keep in step with ROUTES in public/main.js.
 */
export const PAGE_PREFIXES = ['endpoints', 'destinations', 'incidents', 'agents', 'subscriptions', 'usage', 'keys', 'members'] as const;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

// The page talks only to this origin and runs only its own scripts: a strict
// CSP means a captured body that smuggles HTML can never execute here.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' blob: data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

interface Asset {
  body: Buffer;
  type: string;
}

/** Every file under public/, keyed by its URL below /dashboard/, read once at start. */
function readAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (TYPES[extname(name)]) assets.set(relative(PUBLIC_DIR, path).split(sep).join('/'), { body: readFileSync(path), type: TYPES[extname(name)] });
    }
  };
  walk(PUBLIC_DIR);
  // Preact + hooks + htm in one ES module with no imports of its own (public/lib/html.js explains why).
  // (its package "exports" name the file only through conditions Node does not use, so resolve beside the main file)
  const htmMain = createRequire(import.meta.url).resolve('htm');
  assets.set('vendor/preact.js', { body: readFileSync(join(dirname(htmMain), '..', 'preact', 'standalone.module.js')), type: TYPES['.js'] });
  return assets;
}

function send(reply: FastifyReply, asset: Asset): FastifyReply {
  return reply
    .header('content-type', asset.type)
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache')
    .send(asset.body);
}

/** The web dashboard: static assets read once at start, a client of /v1 with the user's API key. */
export function dashboardRoutes(app: FastifyInstance): void {
  const assets = readAssets();
  const index = assets.get('index.html');
  if (!index) throw new Error('dashboard: public/index.html is missing');
  // (their request lines are logged at debug: src/http/request-logging.ts)
  const quiet = { schema: { hide: true } };

  // Browsers ask for it on every page load; an empty answer keeps the console clean.
  app.get('/favicon.ico', quiet, async (_request, reply) => reply.status(204).send());
  app.get('/', quiet, async (_request, reply) => send(reply, index));
  for (const prefix of PAGE_PREFIXES) {
    app.get(`/${prefix}`, quiet, async (_request, reply) => send(reply, index));
    app.get(`/${prefix}/*`, quiet, async (_request, reply) => send(reply, index));
  }
  for (const [path, asset] of assets) {
    if (path !== 'index.html') app.get(`/dashboard/${path}`, quiet, async (_request, reply) => send(reply, asset));
  }
}
