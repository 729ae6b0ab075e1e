/**
 * Response-schema benchmark (npm run bench:serialize): GET
 * /v1/endpoints/:id/requests?limit=100 through the real app (inject, no
 * sockets) with the route's response schema (Fastify's compiled serialiser)
 * divided by the same app with the response schema removed (JSON.stringify),
 * alternating in rounds on one in-memory PGlite. Also prints the serialiser
 * alone on the same page, where the difference is not diluted by the query.
 * Each round measures both apps (their order alternating) by requests per
 * second and by this process's CPU time per request, the figure that holds
 * on a machine busy with other work.
 * Env: BENCH_REQUESTS (per round, default 300), BENCH_ROUNDS (default 7).
 */
import type { RouteOptions } from 'fastify';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Authenticator } from '../src/auth/authenticate.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { buildApp } from '../src/http/app.ts';
import type { RouteModule } from '../src/http/deps.ts';
import { routeModules } from '../src/routes.ts';
import { seedOrg, testConfig } from '../test/helpers/app.ts';
import { insertCaptures, insertEndpoint } from '../test/helpers/fixtures.ts';
import { median } from './stats.ts';

const N = Number(process.env.BENCH_REQUESTS ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

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

/**
 * Requests per second by the wall clock, and CPU time per request of this
 * process (user + system; PGlite runs in it too): on a machine shared with
 * other work the wall clock measures the neighbours as much as the code,
 * while CPU time counts only what this process did.
 */
async function measure(a: typeof fast): Promise<{ rps: number; cpuUs: number }> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) await a.inject({ url, headers });
  const c = process.cpuUsage(c0);
  return { rps: N / ((performance.now() - t0) / 1000), cpuUs: (c.user + c.system) / N };
}
const range = (xs: number[]) => `${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)}`;
const rateRatios: number[] = [];
const cpuRatios: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  // ABBA: each side goes first every other round
  const [p, f] = r % 2 === 0 ? [await measure(plain), await measure(fast)] : [await measure(fast), await measure(plain)].reverse();
  rateRatios.push(f.rps / p.rps);
  cpuRatios.push(p.cpuUs / f.cpuUs);
  console.log(
    `round ${r + 1}: with schema ${f.rps.toFixed(0)} req/s ${f.cpuUs.toFixed(0)} µs CPU/req, without ${p.rps.toFixed(0)} req/s ${p.cpuUs.toFixed(0)} µs CPU/req; speed-up by rate ${(f.rps / p.rps).toFixed(3)}, by CPU ${(p.cpuUs / f.cpuUs).toFixed(3)}`,
  );
}
console.log(`route speed-up with the response schema (without / with), ${ROUNDS} rounds: by CPU per request median ${median(cpuRatios).toFixed(3)} (range ${range(cpuRatios)}); by req/s median ${median(rateRatios).toFixed(3)} (range ${range(rateRatios)})`);

// the serialiser alone on the same page, alternating, by CPU time
const page = JSON.parse(first[0].body);
const stringify = (await import('fast-json-stringify')).default;
const { capturePageResponse } = await import('../src/requests/schemas.ts');
const compiled = stringify(capturePageResponse[200] as never);
const cpu = (fn: () => string) => {
  const c0 = process.cpuUsage();
  for (let i = 0; i < 1000; i++) fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};
const alone: number[] = [];
let tj = 0;
let tc = 0;
for (let r = 0; r < ROUNDS; r++) {
  const [j, c] = r % 2 === 0 ? [cpu(() => JSON.stringify(page)), cpu(() => compiled(page))] : [cpu(() => compiled(page)), cpu(() => JSON.stringify(page))].reverse();
  alone.push(j / c);
  tj += j / ROUNDS;
  tc += c / ROUNDS;
}
console.log(`serialiser alone, 100-item page: JSON.stringify ${tj.toFixed(1)} µs, compiled ${tc.toFixed(1)} µs CPU; speed-up median ${median(alone).toFixed(2)}x (range ${range(alone)})`);
await Promise.all([fast.close(), plain.close()]);
await db.close();
