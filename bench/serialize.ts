/**
 * Response-schema benchmark (npm run bench:serialize): GET
 * /v1/endpoints/:id/requests?limit=100 through the real app (inject, no
 * sockets) with the route's response schema (Fastify's compiled serialiser)
 * divided by the same app with the response schema removed (JSON.stringify),
 * alternating in rounds on one in-memory PGlite. Also prints the serialiser
 * alone on the same page, where the difference is not diluted by the query.
 * Env: BENCH_REQUESTS (per round, default 300), BENCH_ROUNDS (default 3).
 */
import type { RouteOptions } from 'fastify';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Authenticator } from '../src/auth/authenticate.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { buildApp, type RouteModule } from '../src/http/app.ts';
import { routeModules } from '../src/routes.ts';
import { seedOrg, testConfig } from '../test/helpers/app.ts';
import { insertCaptures, insertEndpoint } from '../test/helpers/fixtures.ts';

const N = Number(process.env.BENCH_REQUESTS ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const db = await openPglite();
await migrate(db);
const { key, org } = await seedOrg(db);
const ep = await insertEndpoint(db, org.id);
await insertCaptures(
  db,
  ep,
  Array.from({ length: 100 }, (_, i) => ({ body: `{"i":${i}}`, headers: [['content-type', 'application/json'], ['user-agent', 'Stripe/1.0'], ['stripe-signature', `t=1,v1=${'a'.repeat(64)}`]] as [string, string][] })),
);

async function app(withSchema: boolean) {
  const strip: RouteModule = (v1) => void v1.addHook('onRoute', (r: RouteOptions) => void (withSchema || delete (r.schema as { response?: unknown } | undefined)?.response));
  const authenticator = new Authenticator(db);
  await authenticator.start();
  const a = await buildApp({ db, config: testConfig(), authenticator, logger: pino({ level: 'silent' }), urls: { publicUrl: 'http://a', ingestUrl: 'http://i' } }, { v1: [strip, ...routeModules.v1], root: routeModules.root });
  await a.ready();
  return a;
}
const [fast, plain] = [await app(true), await app(false)];
const url = `/v1/endpoints/${ep.id}/requests?limit=100`;
const headers = { authorization: `Bearer ${key}` };
const first = [await fast.inject({ url, headers }), await plain.inject({ url, headers })];
if (first[0].body !== first[1].body) throw new Error('the two apps answer differently: the schema drops or changes a field');

async function rate(a: typeof fast): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await a.inject({ url, headers });
  return N / ((performance.now() - t0) / 1000);
}
const ratios: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const p = await rate(plain);
  const f = await rate(fast);
  ratios.push(f / p);
  console.log(`round ${r + 1}: with schema ${f.toFixed(0)} req/s, without ${p.toFixed(0)} req/s, ratio ${(f / p).toFixed(3)}`);
}
ratios.sort((x, y) => x - y);
console.log(`route ratio (with / without response schema), median of ${ROUNDS}: ${ratios[Math.floor(ROUNDS / 2)].toFixed(3)}`);

// the serialiser alone on the same page
const page = JSON.parse(first[0].body);
const stringify = (await import('fast-json-stringify')).default;
const { capturePageResponse } = await import('../src/requests/schemas.ts');
const compiled = stringify(capturePageResponse[200] as never);
const time = (fn: () => string) => {
  const t0 = performance.now();
  for (let i = 0; i < 2000; i++) fn();
  return performance.now() - t0;
};
const tj = time(() => JSON.stringify(page));
const tc = time(() => compiled(page));
console.log(`serialiser alone, 100-item page: JSON.stringify ${(tj / 2).toFixed(1)} µs, compiled ${(tc / 2).toFixed(1)} µs, speed-up ${(tj / tc).toFixed(2)}x`);
await Promise.all([fast.close(), plain.close()]);
await db.close();
